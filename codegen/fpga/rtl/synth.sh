#!/usr/bin/env bash
# Synthesizes the accelerator for a Xilinx 7-series part with yosys (synth_xilinx,
# buffers inferred as block RAM): synth.sh PARAMS_DIR LOG. PARAMS_DIR holds the
# configuration's accel_params.svh (build/fpga_rtl/NAME, written by CMake).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
params="$1"
log="$2"
yosys -q -l "$log" -p "read_verilog -sv -I$params $here/common.sv $here/dma.sv $here/load.sv $here/compute.sv \
  $here/store.sv $here/accel.sv; synth_xilinx -top accel -flatten; tee -o $params/utilization.txt stat"
