// The built-in datasets, one file each. DatasetRegistry registers all of them; tests
// build them directly.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "datasets/benchmark.h"
#include "datasets/static_dataset.h"

namespace tensorgym {

// benchmark://ops-v0: the single-operator suite of the Ansor paper (ops_suite.cc).
std::unique_ptr<StaticDataset> make_ops_dataset();
// benchmark://ops-heldout-v0: two held-out shapes of each ops-v0 family (ops_suite.cc).
std::unique_ptr<StaticDataset> make_ops_heldout_dataset();
// benchmark://resnet50-v0: the distinct layers of ResNet-50 v1 (resnet50.cc).
std::unique_ptr<StaticDataset> make_resnet50_dataset();
// benchmark://bert-v0: the operators of a BERT-base encoder layer (bert.cc).
std::unique_ptr<StaticDataset> make_bert_dataset();
// benchmark://mobilenetv2-v0: the distinct depthwise and pointwise layers of
// MobileNetV2 (mobilenetv2.cc).
std::unique_ptr<StaticDataset> make_mobilenetv2_dataset();
// benchmark://fpga-v0: int8 convolutions and GEMMs for the fpga target, with its expert
// schedules (fpga_dataset.cc; the files of datasets/fpga/, embedded at build time).
std::unique_ptr<StaticDataset> make_fpga_dataset();
// generator://random-ops-v0: random small programs, one per seed (random_ops.cc).
std::unique_ptr<Dataset> make_random_ops_dataset();

// The program text generator://random-ops-v0/<seed> resolves to.
std::string random_ops_program(uint64_t seed);

// Hand-written schedules shipped with the suites; the text of datasets/ops/*.sched
// (expert_schedules.cc keeps a copy so the binary does not need the source tree;
// the tests check the copies match the files).
extern const char* const kGemm1024ExpertSchedule;       // datasets/ops/gemm_1024.expert.sched
extern const char* const kConv2dResnet3x3ExpertSchedule;  // datasets/ops/conv2d_resnet_3x3.expert.sched

}  // namespace tensorgym
