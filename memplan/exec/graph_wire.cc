#include "memplan/exec/graph_wire.h"

#include <fmt/format.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "proto/tensorgym.pb.h"

namespace tensorgym {
namespace {

// Elements of one tensor past this are refused (and no product of dimensions overflows).
constexpr int64_t kMaxElements = int64_t(1) << 40;

Status check_index(int index, size_t count, const std::string& what) {
  if (index < 0 || size_t(index) >= count)
    return invalid_argument(fmt::format("{} {} is out of range (there are {})", what, index, count));
  return Status();
}

}  // namespace

std::string serialize_graph_execution(const GraphExecution& e) {
  proto::GraphExecution p;
  p.set_name(e.graph.name);
  for (const GraphTensor& t : e.graph.tensors) {
    proto::GraphTensor* pt = p.add_tensors();
    pt->set_name(t.name);
    for (int64_t d : t.shape) pt->add_shape(d);
    pt->set_dtype(t.dtype);
    pt->set_bytes(t.bytes);
    pt->set_kind(int(t.kind));
  }
  for (const GraphOp& op : e.graph.ops) {
    proto::GraphOp* po = p.add_ops();
    po->set_name(op.name);
    po->set_type(op.type);
    for (int t : op.inputs) po->add_inputs(t);
    for (int t : op.outputs) po->add_outputs(t);
    for (const auto& [key, values] : op.attrs) {
      proto::GraphAttr& a = (*po->mutable_attrs())[key];
      for (int64_t v : values) a.add_values(v);
    }
    for (const auto& [key, value] : op.fattrs) (*po->mutable_fattrs())[key] = value;
    po->set_scratch_bytes(op.scratch_bytes);
    for (int k : op.inplace_inputs) po->add_inplace_inputs(k);
    po->set_fusible(op.fusible);
  }
  for (int o : e.decisions.order) p.add_order(o);
  for (const Alias& a : e.decisions.aliases) {
    proto::GraphAlias* pa = p.add_aliases();
    pa->set_op(a.op);
    pa->set_input(a.input);
    pa->set_output(a.output);
    pa->set_fused(a.fused);
  }
  for (int64_t offset : e.offsets) p.add_offsets(offset);
  p.set_alignment(e.alignment);
  p.set_seed(e.seed);
  // Deterministic (map entries sorted), so equal executions have equal bytes.
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    p.SerializeToCodedStream(&coded);
  }
  return bytes;
}

Expected<GraphExecution> parse_graph_execution(const std::string& bytes) {
  proto::GraphExecution p;
  if (!p.ParseFromString(bytes)) return invalid_argument("the graph execution does not parse");
  if (p.tensors_size() > kMaxGraphTensors || p.ops_size() > kMaxGraphOps)
    return resource_exhausted(fmt::format("graph '{}' has {} operators and {} tensors, over the limits of {} and {}",
                                          p.name(), p.ops_size(), p.tensors_size(), kMaxGraphOps, kMaxGraphTensors));
  GraphExecution e;
  Graph& g = e.graph;
  g.name = p.name();
  for (const proto::GraphTensor& pt : p.tensors()) {
    std::vector<int64_t> shape(pt.shape().begin(), pt.shape().end());
    int64_t elements = 1;
    for (int64_t d : shape) {
      if (d < 0) return invalid_argument(fmt::format("tensor '{}' has dimension {}", pt.name(), d));
      if (d > 0 && elements > kMaxElements / d)
        return invalid_argument(fmt::format("tensor '{}' has more than {} elements", pt.name(), kMaxElements));
      elements *= d;
    }
    if (pt.kind() < 0 || pt.kind() > int(TensorKind::kConstant))
      return invalid_argument(fmt::format("tensor '{}' has kind {}", pt.name(), pt.kind()));
    const int t = g.add_tensor(pt.name(), std::move(shape), TensorKind(pt.kind()), pt.dtype());
    if (g.tensors[size_t(t)].bytes != pt.bytes())
      return invalid_argument(fmt::format("tensor '{}' has {} bytes, but its shape and dtype make {}", pt.name(),
                                          pt.bytes(), g.tensors[size_t(t)].bytes));
  }
  for (const proto::GraphOp& po : p.ops()) {
    GraphOp op;
    op.name = po.name();
    op.type = po.type();
    op.inputs.assign(po.inputs().begin(), po.inputs().end());  // finalize() checks the indices
    op.outputs.assign(po.outputs().begin(), po.outputs().end());
    for (const auto& [key, a] : po.attrs()) op.attrs[key].assign(a.values().begin(), a.values().end());
    for (const auto& [key, value] : po.fattrs()) op.fattrs[key] = value;
    op.scratch_bytes = po.scratch_bytes();
    op.inplace_inputs.assign(po.inplace_inputs().begin(), po.inplace_inputs().end());
    op.fusible = po.fusible();
    g.ops.push_back(std::move(op));
  }
  TG_RETURN_IF_ERROR(g.finalize());
  for (int o : p.order()) {
    TG_RETURN_IF_ERROR(check_index(o, g.ops.size(), "the order names operator"));
    e.decisions.order.push_back(o);
  }
  for (const proto::GraphAlias& pa : p.aliases()) {
    TG_RETURN_IF_ERROR(check_index(pa.op(), g.ops.size(), "an alias names operator"));
    TG_RETURN_IF_ERROR(check_index(pa.input(), g.tensors.size(), "an alias names tensor"));
    TG_RETURN_IF_ERROR(check_index(pa.output(), g.tensors.size(), "an alias names tensor"));
    e.decisions.aliases.push_back(Alias{pa.op(), pa.input(), pa.output(), pa.fused()});
  }
  e.offsets.assign(p.offsets().begin(), p.offsets().end());
  if (p.alignment() <= 0) return invalid_argument(fmt::format("the alignment is {}", p.alignment()));
  e.alignment = p.alignment();
  e.seed = p.seed();
  return e;
}

}  // namespace tensorgym
