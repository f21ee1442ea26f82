#include "cli/cli_common.h"

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <sstream>

namespace tensorgym::cli {

Expected<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot read " + path + ": no such file or not readable");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status(StatusCode::kDataLoss, "error while reading " + path);
  return ss.str();
}

Expected<ProgramPtr> load_program(const std::string& path) {
  TG_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  Expected<Program> program = parse_program(text);
  if (!program.ok()) return Status(program.status().code(), path + ":" + program.status().message());
  return std::make_shared<const Program>(std::move(*program));
}

void ScheduleSource::add_options(CLI::App& app) {
  auto* t = app.add_option("--schedule", text, "Schedule primitives, ';' or newline separated");
  auto* f = app.add_option("--schedule-file", file, "File holding the schedule primitives");
  t->excludes(f);
}

Expected<Schedule> load_schedule(const ProgramPtr& program, const ScheduleSource& source) {
  std::string text = source.text;
  std::string where = "--schedule";
  if (!source.file.empty()) {
    TG_ASSIGN_OR_RETURN(text, read_text_file(source.file));
    where = source.file;
  }
  Expected<Schedule> s = Schedule::from_text(program, text);
  if (!s.ok()) return Status(s.status().code(), where + ":" + s.status().message());
  return s;
}

int report_error(const Status& status) {
  std::cerr << "tensorgym: error: " << status.message() << " [" << status_code_name(status.code()) << "]\n";
  return 1;
}

}  // namespace tensorgym::cli
