// The agents by name.
#include "agents/env_agents.h"
#include "agents/evolutionary_agent.h"
#include "agents/search.h"

namespace tensorgym {

std::vector<std::string> agent_names() { return {"random", "greedy", "beam", "evolutionary"}; }

Expected<std::unique_ptr<SearchAgent>> make_agent(const std::string& name) {
  if (name == "random") return make_random_agent();
  if (name == "greedy") return make_greedy_agent();
  if (name == "beam") return make_beam_agent();
  if (name == "evolutionary") return make_evolutionary_agent();
  std::string known;
  for (const std::string& n : agent_names()) known += (known.empty() ? "" : ", ") + n;
  return not_found("no agent '" + name + "' (agents: " + known + ")");
}

}  // namespace tensorgym
