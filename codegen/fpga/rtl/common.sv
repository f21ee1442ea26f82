// Building blocks of the accelerator (docs/fpga.md "RTL"): RAMs that synthesis maps to
// block RAM, the command FIFOs and the dependency token counters.

// A synchronous RAM: one write port, one registered read port (read-first).
module ram_1w1r #(parameter int W = 8, parameter int D = 16) (
    input  logic                 clk,
    input  logic                 we,
    input  logic [$clog2(D)-1:0] waddr,
    input  logic [W-1:0]         wdata,
    input  logic [$clog2(D)-1:0] raddr,
    output logic [W-1:0]         rdata
);
  logic [W-1:0] mem [0:D-1];
  always_ff @(posedge clk) begin
    if (we) mem[waddr] <= wdata;
    rdata <= mem[raddr];
  end
endmodule

// One write port, two registered read ports (the accumulators: the ALU reads dst and src).
module ram_1w2r #(parameter int W = 8, parameter int D = 16) (
    input  logic                 clk,
    input  logic                 we,
    input  logic [$clog2(D)-1:0] waddr,
    input  logic [W-1:0]         wdata,
    input  logic [$clog2(D)-1:0] raddr_a,
    output logic [W-1:0]         rdata_a,
    input  logic [$clog2(D)-1:0] raddr_b,
    output logic [W-1:0]         rdata_b
);
  logic [W-1:0] mem [0:D-1];
  always_ff @(posedge clk) begin
    if (we) mem[waddr] <= wdata;
    rdata_a <= mem[raddr_a];
    rdata_b <= mem[raddr_b];
  end
endmodule

// A module's command queue: instructions fetched, not yet started. The head reads
// combinationally, so a module starts the cycle after the push.
module cmd_fifo #(parameter int DEPTH = 16) (
    input  logic         clk,
    input  logic         rst,
    input  logic         push,
    input  logic [127:0] din,
    input  logic         pop,
    output logic [127:0] head,
    output logic         empty,
    output logic         full
);
  localparam int AW = $clog2(DEPTH);
  logic [127:0] mem [0:DEPTH-1];
  logic [AW-1:0] rptr, wptr;
  logic [AW:0] count;
  assign head = mem[rptr];
  assign empty = count == 0;
  assign full = count == DEPTH;
  always_ff @(posedge clk) begin
    if (rst) begin
      rptr <= 0;
      wptr <= 0;
      count <= 0;
    end else begin
      if (push) begin
        mem[wptr] <= din;
        wptr <= wptr + 1'b1;
      end
      if (pop) rptr <= rptr + 1'b1;
      count <= count + (push ? 1'b1 : 1'b0) - (pop ? 1'b1 : 1'b0);
    end
  end
endmodule

// A dependency token queue: a counter. A token pushed at the end of cycle t-1 (the
// producer's last cycle) is visible, and can be popped, at t.
module token_queue (
    input  logic clk,
    input  logic rst,
    input  logic push,
    input  logic pop,
    output logic nonzero
);
  logic [15:0] count;
  assign nonzero = count != 0;
  always_ff @(posedge clk) begin
    if (rst) count <= 0;
    else count <= count + (push ? 16'd1 : 16'd0) - (pop ? 16'd1 : 16'd0);
  end
endmodule
