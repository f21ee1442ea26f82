`include "accel_params.svh"
// The accelerator (docs/fpga.md): fetch, three command queues, the load, compute and
// store modules, four dependency token queues, the INP, WGT and OUT buffers (compute
// holds UOP and ACC), and one DRAM request port per module. The testbench (rtl_sim.cc)
// feeds instructions, arbitrates the DRAM port and holds DRAM.
module accel (
    input  logic         clk,
    input  logic         rst,
    // DRAM requests each module may have in flight: 1..`ACCEL_DRAM_MAX_OUTSTANDING (AXI's
    // outstanding transactions; the memory system sets it, as a control register would)
    input  logic [6:0]   dram_max_outstanding,
    // instructions, in stream order; fetch takes one a cycle when its module's queue has room
    input  logic         insn_valid,
    input  logic [127:0] insn_data,
    output logic         insn_ready,
    output logic         finished,   // FINISH has completed
    output logic         idle,       // no module works and no queue holds an instruction
    // each module's activity this cycle, for the testbench's cycle breakdown (dma.sv's stat)
    output logic [4:0]   ld_stat,
    output logic [4:0]   cp_stat,
    output logic [4:0]   st_stat,
    // DRAM ports: a request per row; resp_done in the cycle it completes at the end of
    output logic         ld_req_valid,
    output logic [47:0]  ld_req_addr,
    output logic [31:0]  ld_req_bytes,
    output logic [2:0]   ld_req_buf,
    output logic         ld_req_write,
    input  logic         ld_resp_done,
    input  logic         ld_rd_valid,
    input  logic [`ACCEL_LD_BITS-1:0] ld_rd_data,
    output logic         cp_req_valid,
    output logic [47:0]  cp_req_addr,
    output logic [31:0]  cp_req_bytes,
    output logic [2:0]   cp_req_buf,
    output logic         cp_req_write,
    input  logic         cp_resp_done,
    input  logic         cp_rd_valid,
    input  logic [`ACCEL_CP_BITS-1:0] cp_rd_data,
    output logic         st_req_valid,
    output logic [47:0]  st_req_addr,
    output logic [31:0]  st_req_bytes,
    output logic [2:0]   st_req_buf,
    output logic         st_req_write,
    input  logic         st_resp_done,
    output logic         st_wr_valid,
    output logic [`ACCEL_OUT_BITS-1:0] st_wr_data
);
  localparam int QD = `ACCEL_QUEUE_DEPTH;

  // ---- fetch: the module of the next instruction, and room in its queue
  logic [2:0] push, pop, empty, full;
  logic [127:0] head [0:2];
  logic [1:0] target;  // 0 load, 1 compute, 2 store
  always_comb begin
    if (insn_data[2:0] == 3'd0) target = insn_data[9:7] == 3'd1 || insn_data[9:7] == 3'd2 ? 2'd0 : 2'd1;
    else if (insn_data[2:0] == 3'd1) target = 2'd2;
    else target = 2'd1;
  end
  assign insn_ready = !full[target];
  assign push = insn_valid && !full[target] ? 3'b001 << target : 3'b000;

  genvar m;
  generate
    for (m = 0; m < 3; m = m + 1) begin : queues
      cmd_fifo #(.DEPTH(QD)) q (
          .clk, .rst, .push(push[m]), .din(insn_data), .pop(pop[m]), .head(head[m]), .empty(empty[m]),
          .full(full[m]));
    end
  endgenerate

  // ---- dependency tokens
  logic l2c_push, l2c_pop, l2c_any, c2l_push, c2l_pop, c2l_any;
  logic c2s_push, c2s_pop, c2s_any, s2c_push, s2c_pop, s2c_any;
  token_queue load_to_compute (.clk, .rst, .push(l2c_push), .pop(l2c_pop), .nonzero(l2c_any));
  token_queue compute_to_load (.clk, .rst, .push(c2l_push), .pop(c2l_pop), .nonzero(c2l_any));
  token_queue compute_to_store (.clk, .rst, .push(c2s_push), .pop(c2s_pop), .nonzero(c2s_any));
  token_queue store_to_compute (.clk, .rst, .push(s2c_push), .pop(s2c_pop), .nonzero(s2c_any));

  // ---- buffers shared between modules
  logic inp_we, wgt_we, out_we;
  logic [$clog2(`ACCEL_INP_DEPTH)-1:0] inp_waddr, inp_raddr;
  logic [$clog2(`ACCEL_WGT_DEPTH)-1:0] wgt_waddr, wgt_raddr;
  logic [$clog2(`ACCEL_ACC_DEPTH)-1:0] out_waddr, out_raddr;
  logic [`ACCEL_INP_BITS-1:0] inp_wdata, inp_rdata;
  logic [`ACCEL_WGT_BITS-1:0] wgt_wdata, wgt_rdata;
  logic [`ACCEL_OUT_BITS-1:0] out_wdata, out_rdata;
  ram_1w1r #(.W(`ACCEL_INP_BITS), .D(`ACCEL_INP_DEPTH)) inp (
      .clk, .we(inp_we), .waddr(inp_waddr), .wdata(inp_wdata), .raddr(inp_raddr), .rdata(inp_rdata));
  ram_1w1r #(.W(`ACCEL_WGT_BITS), .D(`ACCEL_WGT_DEPTH)) wgt (
      .clk, .we(wgt_we), .waddr(wgt_waddr), .wdata(wgt_wdata), .raddr(wgt_raddr), .rdata(wgt_rdata));
  ram_1w1r #(.W(`ACCEL_OUT_BITS), .D(`ACCEL_ACC_DEPTH)) out (
      .clk, .we(out_we), .waddr(out_waddr), .wdata(out_wdata), .raddr(out_raddr), .rdata(out_rdata));

  // ---- the modules
  logic ld_busy, cp_busy, st_busy;
  assign idle = !ld_busy && !cp_busy && !st_busy && empty == 3'b111;

  load_module load (
      .clk, .rst, .max_outstanding(dram_max_outstanding),
      .cmd_empty(empty[0]), .cmd_head(head[0]), .cmd_pop(pop[0]), .tok_next(c2l_any),
      .pop_next(c2l_pop), .push_next(l2c_push), .busy(ld_busy), .stat(ld_stat),
      .req_valid(ld_req_valid), .req_addr(ld_req_addr),
      .req_bytes(ld_req_bytes), .req_buf(ld_req_buf), .req_write(ld_req_write), .resp_done(ld_resp_done),
      .rd_valid(ld_rd_valid), .rd_data(ld_rd_data), .inp_we, .inp_waddr, .inp_wdata, .wgt_we, .wgt_waddr,
      .wgt_wdata);

  compute_module compute (
      .clk, .rst, .max_outstanding(dram_max_outstanding),
      .cmd_empty(empty[1]), .cmd_head(head[1]), .cmd_pop(pop[1]), .tok_prev(l2c_any),
      .tok_next(s2c_any), .pop_prev(l2c_pop), .pop_next(s2c_pop), .push_prev(c2l_push), .push_next(c2s_push),
      .busy(cp_busy), .stat(cp_stat), .finished, .req_valid(cp_req_valid), .req_addr(cp_req_addr),
      .req_bytes(cp_req_bytes),
      .req_buf(cp_req_buf), .req_write(cp_req_write), .resp_done(cp_resp_done), .rd_valid(cp_rd_valid),
      .rd_data(cp_rd_data), .inp_raddr, .inp_rdata, .wgt_raddr, .wgt_rdata, .out_we, .out_waddr, .out_wdata);

  store_module store (
      .clk, .rst, .max_outstanding(dram_max_outstanding),
      .cmd_empty(empty[2]), .cmd_head(head[2]), .cmd_pop(pop[2]), .tok_prev(c2s_any),
      .pop_prev(c2s_pop), .push_prev(s2c_push), .busy(st_busy), .stat(st_stat),
      .req_valid(st_req_valid), .req_addr(st_req_addr),
      .req_bytes(st_req_bytes), .req_buf(st_req_buf), .req_write(st_req_write), .resp_done(st_resp_done),
      .wr_valid(st_wr_valid), .wr_data(st_wr_data), .out_raddr, .out_rdata);
endmodule
