`include "accel_params.svh"
// The compute module: LOADs of UOP and ACC, GEMM, ALU and FINISH. It owns the micro-op
// and accumulator buffers and writes OUT beside every accumulator GEMM or ALU changes.
//
// GEMM and ALU: a decode cycle, then one iteration a cycle through three stages (S0
// reads the micro-op, S1 forms the indices and reads the operands, S2 computes and
// writes), then the configured pipeline's drain: 1 + iterations + pipeline cycles. The
// last write lands two cycles after the last iteration, so the pipeline parameter must
// be at least 2. An iteration that reads the accumulator the previous one writes gets
// the value forwarded.
module compute_module (
    input  logic         clk,
    input  logic         rst,
    input  logic [6:0]   max_outstanding,  // DRAM requests in flight at most (dma)
    input  logic         cmd_empty,
    input  logic [127:0] cmd_head,
    output logic         cmd_pop,
    input  logic         tok_prev,   // load -> compute
    input  logic         tok_next,   // store -> compute
    output logic         pop_prev,
    output logic         pop_next,
    output logic         push_prev,  // compute -> load
    output logic         push_next,  // compute -> store
    output logic         busy,
    // what the module does this cycle: {pad, xfer, loop, start, token wait} (docs/fpga.md "RTL")
    output logic [4:0]   stat,
    output logic         finished,
    // DRAM
    output logic         req_valid,
    output logic [47:0]  req_addr,
    output logic [31:0]  req_bytes,
    output logic [2:0]   req_buf,
    output logic         req_write,
    input  logic         resp_done,
    input  logic         rd_valid,
    input  logic [`ACCEL_CP_BITS-1:0] rd_data,
    // the operands GEMM reads
    output logic [$clog2(`ACCEL_INP_DEPTH)-1:0] inp_raddr,
    input  logic [`ACCEL_INP_BITS-1:0] inp_rdata,
    output logic [$clog2(`ACCEL_WGT_DEPTH)-1:0] wgt_raddr,
    input  logic [`ACCEL_WGT_BITS-1:0] wgt_rdata,
    // OUT
    output logic         out_we,
    output logic [$clog2(`ACCEL_ACC_DEPTH)-1:0] out_waddr,
    output logic [`ACCEL_OUT_BITS-1:0] out_wdata
);
  localparam int B = `ACCEL_BATCH, BI = `ACCEL_BLOCK_IN, BO = `ACCEL_BLOCK_OUT;
  localparam int ACC_AW = $clog2(`ACCEL_ACC_DEPTH), UOP_AW = $clog2(`ACCEL_UOP_DEPTH);
  localparam int ACC_BITS = `ACCEL_ACC_BITS;

  logic [127:0] cur;
  logic start, dma_start, dma_busy, dma_last, pad_we, rd_en_unused;
  logic [31:0] row_sram, pad_addr, rd_addr_unused;
  logic [15:0] beat;

  // ---- dispatch
  logic run;                   // issuing iterations
  logic [3:0] drain;           // pipeline cycles left after the last iteration
  logic finish_start;
  assign start = !busy && !cmd_empty && (!cmd_head[3] || tok_prev) && (!cmd_head[4] || tok_next);
  assign busy = dma_busy || run || drain != 0;
  assign cmd_pop = start;
  logic dma_xfer;
  assign stat = {pad_we, dma_xfer, run || drain != 0, start, !busy && !cmd_empty && !start};
  assign pop_prev = start && cmd_head[3];
  assign pop_next = start && cmd_head[4];
  assign dma_start = start && cmd_head[2:0] == 3'd0;
  assign finish_start = start && cmd_head[2:0] == 3'd3;
  logic last;
  assign last = dma_last || finish_start || (drain == 1 && !run);
  logic [127:0] done_insn;  // the instruction that completes: FINISH completes in its decode cycle
  assign done_insn = finish_start ? cmd_head : cur;
  assign push_prev = last && done_insn[5];
  assign push_next = last && done_insn[6];

  dma mover (
      .clk, .rst, .max_outstanding, .start(dma_start), .insn(cmd_head),
      .esh(cmd_head[9:7] == 3'd0 ? 4'd2 : 4'(`ACCEL_ACC_ESH)),
      .busy(dma_busy), .xfer(dma_xfer), .last(dma_last), .req_valid, .req_addr, .req_bytes, .req_buf, .req_write, .resp_done,
      .rd_valid, .row_sram, .beat, .pad_we, .pad_addr, .rd_en(rd_en_unused), .rd_addr(rd_addr_unused));

  // ---- the loop: fields of the current GEMM / ALU
  wire is_gemm = cur[2:0] == 3'd2;
  wire do_reset = cur[7];
  wire [13:0] uop_begin = {1'b0, cur[20:8]}, uop_end = cur[34:21];
  wire [13:0] iter_out = cur[48:35], iter_in = cur[62:49];
  wire [10:0] dst_out = cur[73:63], dst_in = cur[84:74], src_out = cur[95:85], src_in = cur[106:96];
  wire [9:0] wgt_out = cur[116:107], wgt_in = cur[126:117];
  wire [2:0] alu_op = cur[109:107];
  wire use_imm = cur[110];
  wire [31:0] imm = {{16{cur[126]}}, cur[126:111]};

  logic [13:0] u, i, j;
  logic [31:0] d_i, d_ij, s_i, s_ij, w_i, w_ij;
  wire loop_start = start && (cmd_head[2:0] == 3'd2 || cmd_head[2:0] == 3'd4);
  wire has_work = cmd_head[34:21] > {1'b0, cmd_head[20:8]} && cmd_head[48:35] != 0 && cmd_head[62:49] != 0;
  wire [3:0] pipe = cmd_head[2:0] == 3'd2 ? 4'(`ACCEL_GEMM_PIPE) : 4'(`ACCEL_ALU_PIPE);

  always_ff @(posedge clk) begin
    if (rst) begin
      run <= 0;
      drain <= 0;
      finished <= 0;
    end else begin
      if (start) cur <= cmd_head;
      if (finish_start) finished <= 1;
      if (loop_start) begin
        run <= has_work;
        drain <= has_work ? 4'd0 : pipe;
        u <= cmd_head[20:8];
        i <= 0;
        j <= 0;
        {d_i, d_ij, s_i, s_ij, w_i, w_ij} <= '0;
      end else if (run) begin
        if (u + 1 < uop_end) begin
          u <= u + 1'b1;
        end else begin
          u <= uop_begin;
          if (j + 1 < iter_in) begin
            j <= j + 1'b1;
            d_ij <= d_ij + dst_in;
            s_ij <= s_ij + src_in;
            w_ij <= w_ij + wgt_in;
          end else begin
            j <= 0;
            d_i <= d_i + dst_out;
            s_i <= s_i + src_out;
            w_i <= w_i + wgt_out;
            d_ij <= d_i + dst_out;
            s_ij <= s_i + src_out;
            w_ij <= w_i + wgt_out;
            if (i + 1 < iter_out) begin
              i <= i + 1'b1;
            end else begin
              run <= 0;
              drain <= is_gemm ? 4'(`ACCEL_GEMM_PIPE) : 4'(`ACCEL_ALU_PIPE);
            end
          end
        end
      end else if (drain != 0) begin
        drain <= drain - 1'b1;
      end
    end
  end

  // ---- micro-op buffer: two banks (even and odd entries), so a LOAD writes the two
  // micro-ops of an 8-byte beat in one cycle.
  logic uop_we0, uop_we1;
  logic [UOP_AW-2:0] uop_wa0, uop_wa1, uop_ra;
  logic [31:0] uop_wd0, uop_wd1, uop_rd0, uop_rd1;
  wire loading_uop = dma_busy && cur[9:7] == 3'd0;
  wire [31:0] e0 = row_sram + {15'b0, beat, 1'b0};  // the beat's first micro-op
  wire second = {beat, 1'b1} < {1'b0, cur[89:74]};  // the beat holds a second one
  always_comb begin
    uop_we0 = 0;
    uop_we1 = 0;
    uop_wa0 = e0[UOP_AW-1:1];
    uop_wa1 = e0[UOP_AW-1:1];
    uop_wd0 = rd_data[31:0];
    uop_wd1 = rd_data[31:0];
    if (loading_uop && rd_valid) begin
      if (!e0[0]) begin  // even first: both at the same row of the banks
        uop_we0 = 1;
        uop_we1 = second;
        uop_wd1 = rd_data[63:32];
      end else begin     // odd first: the second lands in the next even entry
        uop_we1 = 1;
        uop_we0 = second;
        uop_wa0 = e0[UOP_AW-1:1] + 1'b1;
        uop_wd0 = rd_data[63:32];
      end
    end
  end
  assign uop_ra = u[UOP_AW-1:1];
  ram_1w1r #(.W(32), .D(`ACCEL_UOP_DEPTH / 2)) uop_even (
      .clk, .we(uop_we0), .waddr(uop_wa0), .wdata(uop_wd0), .raddr(uop_ra), .rdata(uop_rd0));
  ram_1w1r #(.W(32), .D(`ACCEL_UOP_DEPTH / 2)) uop_odd (
      .clk, .we(uop_we1), .waddr(uop_wa1), .wdata(uop_wd1), .raddr(uop_ra), .rdata(uop_rd1));

  // ---- S1: the micro-op and the loop offsets give the operands' indices.
  logic s1_valid, s1_odd;
  logic [31:0] s1_doff, s1_soff, s1_woff;
  always_ff @(posedge clk) begin
    s1_valid <= !rst && run;
    s1_odd <= u[0];
    s1_doff <= d_ij;
    s1_soff <= s_ij;
    s1_woff <= w_ij;
  end
  wire [31:0] uop = s1_odd ? uop_rd1 : uop_rd0;
  wire [31:0] dst = {21'b0, uop[10:0]} + s1_doff;
  wire [31:0] src = {21'b0, uop[21:11]} + s1_soff;
  wire [31:0] wgt = {22'b0, uop[31:22]} + s1_woff;
  assign inp_raddr = src[$clog2(`ACCEL_INP_DEPTH)-1:0];
  assign wgt_raddr = wgt[$clog2(`ACCEL_WGT_DEPTH)-1:0];

  // ---- accumulators
  logic acc_we;
  logic [ACC_AW-1:0] acc_waddr;
  logic [ACC_BITS-1:0] acc_wdata, acc_rd_a, acc_rd_b;
  ram_1w2r #(.W(ACC_BITS), .D(`ACCEL_ACC_DEPTH)) acc (
      .clk, .we(acc_we), .waddr(acc_waddr), .wdata(acc_wdata), .raddr_a(dst[ACC_AW-1:0]), .rdata_a(acc_rd_a),
      .raddr_b(src[ACC_AW-1:0]), .rdata_b(acc_rd_b));

  // ---- S2: compute and write.
  logic s2_valid;
  logic [ACC_AW-1:0] s2_dst, s2_src;
  logic fwd_valid;
  logic [ACC_AW-1:0] fwd_addr;
  logic [ACC_BITS-1:0] fwd_data, result;
  always_ff @(posedge clk) begin
    s2_valid <= !rst && s1_valid;
    s2_dst <= dst[ACC_AW-1:0];
    s2_src <= src[ACC_AW-1:0];
    fwd_valid <= !rst && s2_valid;
    fwd_addr <= s2_dst;
    fwd_data <= result;
  end
  wire [ACC_BITS-1:0] a_val = fwd_valid && fwd_addr == s2_dst ? fwd_data : acc_rd_a;
  wire [ACC_BITS-1:0] b_val = fwd_valid && fwd_addr == s2_src ? fwd_data : acc_rd_b;

  function automatic logic [31:0] alu(input logic [2:0] op, input logic [31:0] a, input logic [31:0] s);
    logic signed [31:0] sa, ss;
    logic [32:0] neg;
    logic [31:0] q;  // a >>> s[4:0]: one shifter for SHR and REQ
    logic above, below;
    logic [31:0] req;
    sa = a;
    ss = s;
    neg = 33'd0 - {s[31], s};
    q = sa >>> s[4:0];
    // REQ's bounds by bits, not comparators: q > 127, and q < 0 (ReLU) or q < -128.
    above = !q[31] && |q[30:7];
    below = q[31] && (s[5] || !(&q[30:7]));
    // The result lies in [-128, 127]: bits 31..7 are one sign bit (1 only for -128 or an
    // unsaturated negative q), so only eight bits are chosen.
    req = {{25{below ? !s[5] : q[31]}}, above ? 7'h7f : below ? 7'h00 : q[6:0]};
    case (op)
      3'd0: alu = sa < ss ? a : s;                       // MIN
      3'd1: alu = sa > ss ? a : s;                       // MAX
      3'd2: alu = a + s;                                 // ADD (wraps)
      3'd3:                                              // SHR (negative: left), clamped at 31
        if (!ss[31]) alu = ss > 31 ? sa >>> 31 : q;
        else alu = neg > 31 ? a << 31 : a << neg[4:0];
      3'd4: alu = a * s;                                 // MUL (wraps)
      3'd5: alu = sa > ss ? s : sa < $signed(~s) ? ~s : a;  // CLIP to [-s - 1, s]
      3'd6: alu = req;                                   // REQ: s[4:0] shift, s[5] ReLU
      default: alu = a;
    endcase
  endfunction

  // Two products per DSP48E1 (25 x 18 bits signed, a pre-adder on the 25-bit port and a
  // 48-bit post-adder): output channels o and o + 1 (weights w1, w2) share each input x,
  // so input lane k's one multiply makes both, in a chain of BLOCK_IN DSPs per pair:
  //   P_k = C_k + x_k * W_k,  W_k = w1_k * 2^16 + w2_k,  C_k = H_{k-1} * 2^16 + 2^15,
  // H_{-1} o's accumulator, H_k = P_k[47:16]. Exact for every int8 input:
  // - r = x * w1 and q = x * w2 lie in [-16256, 16384] (-128 * 127, -128 * -128), inside
  //   [-2^15, 2^15): q needs w2's field to be 16 bits (15 do not hold 16384).
  // - W lies in [-128 * 2^16 - 128, 127 * 2^16 + 127], inside the 25-bit port's
  //   [-2^24, 2^24) (a 17-bit field would not fit: -128 * 2^17 - 1 < -2^24).
  // - P_k = (H_{k-1} + r_k) * 2^16 + (q_k + 2^15) and 0 <= q_k + 2^15 < 2^16: the low
  //   field neither borrows from nor carries into the high one, so H_k = H_{k-1} + r_k
  //   (mod 2^32: P is mod 2^48) and P_k[15:0] = q_k + 2^15.
  // So o gets acc + sum r_k from the chain, wrapping as fsim's int32, and o + 1 gets
  // acc + sum P_k[15:0] - BLOCK_IN * 2^15, summed in LUTs (tests/fpga_rtl_test.cc checks
  // one step on all 2^24 x, w1, w2).
  function automatic logic [47:0] pair_mac(input logic [31:0] h, input logic signed [7:0] x,
                                           input logic signed [7:0] w1, input logic signed [7:0] w2);
    logic signed [24:0] w;
    w = $signed({w1[7], w1, 16'b0}) + $signed({{17{w2[7]}}, w2});
    pair_mac = $signed({h, 16'h8000}) + x * w;
  endfunction

  localparam int LOW_BITS = 16 + $clog2(BI);  // holds the sum of BI 16-bit fields
  integer b, o, k, lane;
  logic [31:0] sum;
  logic [47:0] chain;
  logic [LOW_BITS-1:0] low;
  logic signed [15:0] product;
  always_comb begin
    result = '0;
    sum = '0;
    chain = '0;
    low = '0;
    product = '0;
    o = 0;
    k = 0;
    for (b = 0; b < B; b = b + 1)
      if (!is_gemm) begin
        for (o = 0; o < BO; o = o + 1)
          result[32 * (b * BO + o) +: 32] = alu(alu_op, a_val[32 * (b * BO + o) +: 32],
                                                use_imm ? imm : b_val[32 * (b * BO + o) +: 32]);
      end else if (!do_reset) begin
        for (o = 0; o + 1 < BO; o = o + 2) begin
          chain = {a_val[32 * (b * BO + o) +: 32], 16'b0};
          low = '0;
          for (k = 0; k < BI; k = k + 1) begin
            chain = pair_mac(chain[47:16], inp_rdata[8 * (b * BI + k) +: 8], wgt_rdata[8 * (o * BI + k) +: 8],
                             wgt_rdata[8 * ((o + 1) * BI + k) +: 8]);
            low = low + chain[15:0];
          end
          result[32 * (b * BO + o) +: 32] = chain[47:16];
          result[32 * (b * BO + o + 1) +: 32] = a_val[32 * (b * BO + o + 1) +: 32] + low - BI * 32'h8000;
        end
        if (BO % 2 == 1) begin  // an odd BLOCK_OUT's last channel has no partner
          sum = a_val[32 * (b * BO + BO - 1) +: 32];
          for (k = 0; k < BI; k = k + 1) begin
            product = $signed(inp_rdata[8 * (b * BI + k) +: 8]) * $signed(wgt_rdata[8 * ((BO - 1) * BI + k) +: 8]);
            sum = sum + {{16{product[15]}}, product};
          end
          result[32 * (b * BO + BO - 1) +: 32] = sum;
        end
      end
  end

  // ACC: GEMM / ALU results, or a LOAD's beats and zero entries.
  wire loading_acc = dma_busy && cur[9:7] == 3'd3;
  always_comb begin
    if (s2_valid) begin
      acc_we = 1;
      acc_waddr = s2_dst;
      acc_wdata = result;
    end else begin
      acc_we = loading_acc && (rd_valid || pad_we);
      acc_waddr = pad_we ? pad_addr[ACC_AW-1:0] : row_sram[ACC_AW-1:0] + beat[ACC_AW-1:0];
      acc_wdata = pad_we ? '0 : rd_data[ACC_BITS-1:0];
    end
  end
  always_comb begin
    out_we = s2_valid;
    out_waddr = s2_dst;
    for (lane = 0; lane < B * BO; lane = lane + 1) out_wdata[8 * lane +: 8] = result[32 * lane +: 8];
  end
endmodule
