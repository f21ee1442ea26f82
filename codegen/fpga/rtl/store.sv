`include "accel_params.svh"
// The store module: STOREs of OUT. It pops compute -> store (pop_prev) and pushes
// store -> compute (push_prev). Entries leave a cycle after they are read.
module store_module (
    input  logic         clk,
    input  logic         rst,
    input  logic [6:0]   max_outstanding,  // DRAM requests in flight at most (dma)
    input  logic         cmd_empty,
    input  logic [127:0] cmd_head,
    output logic         cmd_pop,
    input  logic         tok_prev,   // compute -> store holds a token
    output logic         pop_prev,
    output logic         push_prev,
    output logic         busy,
    // what the module does this cycle: {pad, xfer, loop, start, token wait} (docs/fpga.md "RTL")
    output logic [4:0]   stat,
    // DRAM
    output logic         req_valid,
    output logic [47:0]  req_addr,
    output logic [31:0]  req_bytes,
    output logic [2:0]   req_buf,
    output logic         req_write,
    input  logic         resp_done,
    output logic         wr_valid,
    output logic [`ACCEL_OUT_BITS-1:0] wr_data,
    // the OUT buffer's read port
    output logic [$clog2(`ACCEL_ACC_DEPTH)-1:0] out_raddr,
    input  logic [`ACCEL_OUT_BITS-1:0] out_rdata
);
  logic [127:0] cur;
  logic last, dma_busy, rd_en, pad_we_unused;
  logic [31:0] row_sram_unused, pad_addr_unused, rd_addr;
  logic [15:0] beat_unused;
  logic start;

  assign start = !dma_busy && !cmd_empty && (!cmd_head[3] || tok_prev);
  assign cmd_pop = start;
  logic dma_xfer;
  assign stat = {pad_we_unused, dma_xfer, 1'b0, start, !dma_busy && !cmd_empty && !start};
  assign pop_prev = start && cmd_head[3];
  assign push_prev = last && cur[5];
  assign busy = dma_busy;

  dma mover (
      .clk, .rst, .max_outstanding, .start, .insn(cmd_head), .esh(4'(`ACCEL_OUT_ESH)),
      .busy(dma_busy), .xfer(dma_xfer), .last, .req_valid, .req_addr, .req_bytes, .req_buf, .req_write, .resp_done, .rd_valid(1'b0),
      .row_sram(row_sram_unused), .beat(beat_unused), .pad_we(pad_we_unused), .pad_addr(pad_addr_unused), .rd_en,
      .rd_addr);

  assign out_raddr = rd_addr[$clog2(`ACCEL_ACC_DEPTH)-1:0];
  assign wr_data = out_rdata;
  always_ff @(posedge clk) begin
    if (start) cur <= cmd_head;
    wr_valid <= !rst && rd_en;
  end
endmodule
