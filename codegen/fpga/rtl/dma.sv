`include "accel_params.svh"
// One LOAD or STORE (docs/fpga.md "Timing"): after the decode cycle, one DRAM request
// per row, at most one a cycle and at most `max_outstanding` in flight (the next waits
// for the oldest to complete). The port serves requests in order, so rows complete in
// order and the instruction's last row completes last. A LOAD's data arrives in beats
// the owner writes at row_sram + beat (the row whose data is arriving); a STORE reads
// its entries from the buffer (rd_en, rd_addr), a row's only after its request, and the
// owner sends them a cycle later. A padded LOAD then writes its zero entries, one a
// cycle, in row-major order.
module dma #(parameter int MAX_OUTSTANDING = `ACCEL_DRAM_MAX_OUTSTANDING) (
    input  logic         clk,
    input  logic         rst,
    input  logic         start,     // the instruction's decode cycle
    input  logic [127:0] insn,
    input  logic [3:0]   esh,       // log2 of the buffer entry's bytes
    input  logic [6:0]   max_outstanding,  // the run's limit: 1..MAX_OUTSTANDING
    output logic         busy,
    output logic         last,      // the instruction's final cycle
    output logic         xfer,      // requesting rows or waiting for them
    // DRAM: one request per row
    output logic         req_valid,
    output logic [47:0]  req_addr,  // bytes
    output logic [31:0]  req_bytes,
    output logic [2:0]   req_buf,
    output logic         req_write,
    input  logic         resp_done, // the oldest request completes at the end of this cycle
    input  logic         rd_valid,  // a beat of a LOAD's row
    // buffer side
    output logic [31:0]  row_sram,  // the first entry of the row whose data moves
    output logic [15:0]  beat,      // LOAD: beats received in that row
    output logic         pad_we,
    output logic [31:0]  pad_addr,
    output logic         rd_en,     // STORE: read an entry
    output logic [31:0]  rd_addr
);
  localparam logic [1:0] IDLE = 2'd0, XFER = 2'd1, PAD = 2'd3;
  localparam int CW = $clog2(MAX_OUTSTANDING + 1);
  logic [1:0] state;
  logic write;
  logic [2:0] buffer;
  logic [3:0] shift;
  logic [15:0] sram_base, y_size, x_size, x_stride;
  logic [15:0] y;    // rows requested
  logic [15:0] ry;   // rows completed
  logic [15:0] dy;   // STORE: rows read from the buffer
  logic [CW-1:0] in_flight;
  logic [3:0] y_pad0, y_pad1, x_pad0, x_pad1;
  logic [16:0] width;
  logic [31:0] dram_row, pad_left, pads;
  logic [16:0] py, px;

  // The first zero entry at or after (cy, cx) in row-major order, as {row, column}.
  function automatic logic [33:0] pad_seek(input logic [16:0] cy, input logic [17:0] cx);
    logic [17:0] ny, nx;
    logic data_row;
    ny = {1'b0, cy};
    nx = cx;
    data_row = ny >= y_pad0 && ny < y_pad0 + y_size;
    if (data_row && nx >= x_pad0 && nx < x_pad0 + x_size) nx = x_pad0 + x_size;
    if (nx >= width) begin
      nx = 0;
      ny = ny + 1;
    end
    data_row = ny >= y_pad0 && ny < y_pad0 + y_size;
    if (data_row && nx == 0 && x_pad0 == 0) begin
      if (x_pad1 == 0) ny = y_pad0 + y_size;  // rows without pads: on to the bottom pad
      else nx = {2'b0, x_size};
    end
    pad_seek = {ny[16:0], nx[16:0]};
  endfunction

  logic [33:0] first_pad, next_pad;
  assign first_pad = pad_seek(17'd0, 18'd0);
  assign next_pad = pad_seek(py, {1'b0, px} + 18'd1);

  logic [16:0] in_width, in_rows;
  assign in_width = {13'b0, insn[117:114]} + {1'b0, insn[89:74]} + {13'b0, insn[121:118]};
  assign in_rows = {13'b0, insn[109:106]} + {1'b0, insn[73:58]} + {13'b0, insn[113:110]};

  logic room;  // another request may go out
  wire [6:0] limit = max_outstanding > 7'(MAX_OUTSTANDING) ? 7'(MAX_OUTSTANDING) : max_outstanding;
  assign room = 7'(in_flight) < limit;
  assign busy = state != IDLE;
  assign xfer = state == XFER;
  assign req_valid = state == XFER && y < y_size && room;
  assign req_addr = {16'b0, dram_row} << shift;
  assign req_bytes = {16'b0, x_size} << shift;
  assign req_buf = buffer;
  assign req_write = write;
  assign pad_we = state == PAD;
  assign pad_addr = {16'b0, sram_base} + py * width + {15'b0, px};
  assign rd_en = write && state == XFER && dy < y;
  assign rd_addr = row_sram + {16'b0, beat};
  wire final_row = state == XFER && resp_done && ry + 1 >= y_size;
  assign last = (final_row && pads == 0) || (state == PAD && pad_left == 1);

  always_ff @(posedge clk) begin
    if (rst) begin
      state <= IDLE;
      in_flight <= 0;
    end else begin
      case (state)
        IDLE:
          if (start) begin
            write <= insn[2:0] == 3'd1;
            buffer <= insn[9:7];
            shift <= esh;
            sram_base <= insn[25:10];
            dram_row <= insn[57:26];
            y_size <= insn[73:58];
            x_size <= insn[89:74];
            x_stride <= insn[105:90];
            y <= 0;
            ry <= 0;
            dy <= 0;
            beat <= 0;
            if (insn[2:0] == 3'd1) begin  // STORE: no pads
              {y_pad0, y_pad1, x_pad0, x_pad1} <= 16'b0;
              width <= {1'b0, insn[89:74]};
              row_sram <= {16'b0, insn[25:10]};
              pads <= 0;
            end else begin
              {y_pad0, y_pad1, x_pad0, x_pad1} <= {insn[109:106], insn[113:110], insn[117:114], insn[121:118]};
              width <= in_width;
              row_sram <= {16'b0, insn[25:10]} + {28'b0, insn[109:106]} * in_width + {28'b0, insn[117:114]};
              pads <= in_rows * in_width - insn[73:58] * insn[89:74];
            end
            state <= XFER;
          end
        XFER: begin
          in_flight <= in_flight + (req_valid ? 1'b1 : 1'b0) - (resp_done ? 1'b1 : 1'b0);
          if (req_valid) begin
            y <= y + 1'b1;
            dram_row <= dram_row + {16'b0, x_stride};
          end
          if (write) begin  // the next entry to read, row by row
            if (rd_en) begin
              if (beat + 1 >= x_size) begin
                beat <= 0;
                dy <= dy + 1'b1;
                row_sram <= row_sram + {15'b0, width};
              end else begin
                beat <= beat + 1'b1;
              end
            end
          end else if (resp_done) begin  // the row's data is in: the next row's comes
            beat <= 0;
            row_sram <= row_sram + {15'b0, width};
          end else if (rd_valid) begin
            beat <= beat + 1'b1;
          end
          if (resp_done) begin
            ry <= ry + 1'b1;
            if (ry + 1 >= y_size) begin
              if (pads != 0) begin
                {py, px} <= first_pad;
                pad_left <= pads;
                state <= PAD;
              end else begin
                state <= IDLE;
              end
            end
          end
        end
        PAD: begin
          {py, px} <= next_pad;
          pad_left <= pad_left - 1'b1;
          if (pad_left == 1) state <= IDLE;
        end
        default: state <= IDLE;
      endcase
    end
  end
endmodule
