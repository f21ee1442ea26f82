`include "accel_params.svh"
// The load module: LOADs of INP and WGT, in order from its command queue. It pops the
// compute -> load queue (pop_next) and pushes load -> compute (push_next).
module load_module (
    input  logic         clk,
    input  logic         rst,
    input  logic [6:0]   max_outstanding,  // DRAM requests in flight at most (dma)
    input  logic         cmd_empty,
    input  logic [127:0] cmd_head,
    output logic         cmd_pop,
    input  logic         tok_next,   // compute -> load holds a token
    output logic         pop_next,
    output logic         push_next,
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
    input  logic         rd_valid,
    input  logic [`ACCEL_LD_BITS-1:0] rd_data,
    // the buffers it fills
    output logic         inp_we,
    output logic [$clog2(`ACCEL_INP_DEPTH)-1:0] inp_waddr,
    output logic [`ACCEL_INP_BITS-1:0] inp_wdata,
    output logic         wgt_we,
    output logic [$clog2(`ACCEL_WGT_DEPTH)-1:0] wgt_waddr,
    output logic [`ACCEL_WGT_BITS-1:0] wgt_wdata
);
  logic [127:0] cur;
  logic last, beat_we, dma_busy, pad_we, rd_en_unused;
  logic [31:0] row_sram, pad_addr, rd_addr_unused, waddr;
  logic [15:0] beat;
  logic start;

  assign start = !dma_busy && !cmd_empty && (!cmd_head[4] || tok_next);
  assign cmd_pop = start;
  logic dma_xfer;
  assign stat = {pad_we, dma_xfer, 1'b0, start, !dma_busy && !cmd_empty && !start};
  assign pop_next = start && cmd_head[4];
  assign push_next = last && cur[6];
  assign busy = dma_busy;

  dma mover (
      .clk, .rst, .max_outstanding, .start, .insn(cmd_head),
      .esh(cmd_head[9:7] == 3'd1 ? 4'(`ACCEL_WGT_ESH) : 4'(`ACCEL_INP_ESH)),
      .busy(dma_busy), .xfer(dma_xfer), .last, .req_valid, .req_addr, .req_bytes, .req_buf, .req_write, .resp_done, .rd_valid,
      .row_sram, .beat, .pad_we, .pad_addr, .rd_en(rd_en_unused), .rd_addr(rd_addr_unused));

  always_ff @(posedge clk) if (start) cur <= cmd_head;

  assign beat_we = rd_valid && dma_busy;
  assign waddr = pad_we ? pad_addr : row_sram + {16'b0, beat};
  assign inp_we = (beat_we || pad_we) && cur[9:7] == 3'd2;
  assign wgt_we = (beat_we || pad_we) && cur[9:7] == 3'd1;
  assign inp_waddr = waddr[$clog2(`ACCEL_INP_DEPTH)-1:0];
  assign wgt_waddr = waddr[$clog2(`ACCEL_WGT_DEPTH)-1:0];
  assign inp_wdata = pad_we ? '0 : rd_data[`ACCEL_INP_BITS-1:0];
  assign wgt_wdata = pad_we ? '0 : rd_data[`ACCEL_WGT_BITS-1:0];
endmodule
