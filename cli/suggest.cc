#include "cli/suggest.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <numeric>

namespace tensorgym::cli {
namespace {

// "--name" and "-n" for every option a command takes.
std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : o->get_snames()) names.push_back("-" + s);
  }
  return names;
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; }))
    if (!s->get_name().empty() && !s->get_group().empty()) names.push_back(s->get_name());
  return names;
}

// The deepest subcommand chosen, and its path ("lower").
const CLI::App* chosen_command(const CLI::App& app, std::string* path) {
  const CLI::App* at = &app;
  path->clear();
  for (;;) {
    std::vector<const CLI::App*> chosen = at->get_subcommands([](const CLI::App* s) { return s->parsed(); });
    if (chosen.empty()) return at;
    at = chosen.front();
    *path += (path->empty() ? "" : " ") + at->get_name();
  }
}

}  // namespace

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t(0));
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string nearest_name(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::string::npos;
  const auto stem = [](const std::string& s) { return s.substr(s.find_first_not_of('-') == std::string::npos ? 0 : s.find_first_not_of('-')); };
  const std::string w = stem(word);
  for (const std::string& c : candidates) {
    const std::string n = stem(c);
    // A word cut short is as good as a near miss.
    const size_t d = w.size() >= 2 && n.rfind(w, 0) == 0 ? 1 : edit_distance(w, n);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  const size_t allowed = std::max<size_t>(2, w.size() / 3);
  return best_distance <= allowed ? best : "";
}

bool explain_unknown_arguments(const CLI::App& app, std::ostream& err) {
  const std::vector<std::string> left = app.remaining(/*recurse=*/true);
  if (left.empty()) return false;
  std::string path;
  const CLI::App* command = chosen_command(app, &path);
  const auto is_option = [](const std::string& a) { return a.size() > 1 && a[0] == '-'; };
  auto word = std::find_if_not(left.begin(), left.end(), is_option);
  auto unknown = std::find_if(left.begin(), left.end(), is_option);
  std::string message;
  if (command == &app && word != left.end()) {
    // No command was recognised: the word that should have been one is the mistake.
    const std::string near = nearest_name(*word, subcommand_names(app));
    message = fmt::format("unknown command '{}'", *word);
    message += near.empty() ? fmt::format(" (commands: {})", fmt::join(subcommand_names(app), ", "))
                            : fmt::format("; did you mean '{}'?", near);
  } else if (unknown != left.end()) {
    // An unknown option before a stray word: the word is most likely its value.
    const std::string name = unknown->substr(0, unknown->find('='));
    const std::string near = nearest_name(name, option_names(*command));
    message = fmt::format("{}unknown option {}", path.empty() ? "" : path + ": ", name);
    if (!near.empty()) message += fmt::format("; did you mean {}?", near);
  } else {
    message = fmt::format("{}: unexpected argument '{}'", path, left.front());
  }
  err << fmt::format("tensorgym: error: {}\nRun with --help for more information.\n", message);
  return true;
}

}  // namespace tensorgym::cli
