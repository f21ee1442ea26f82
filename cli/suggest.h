// What a mistyped command line gets: the argument that was not understood, and the
// nearest name the command knows ("--programm": did you mean --program?).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace tensorgym::cli {

// Levenshtein distance (insertions, deletions, substitutions), case-sensitive.
size_t edit_distance(const std::string& a, const std::string& b);

// The candidate nearest `word`, or "" when none is near enough to be a likely typo
// (a prefix of it, or at most a third of its letters off, and at least 2 allowed).
std::string nearest_name(const std::string& word, const std::vector<std::string>& candidates);

// After a failed parse: when arguments were left over, prints to `err` what was not
// understood, with the nearest option or subcommand name, and returns true. Returns
// false when nothing was left over (the parse error says what is wrong).
bool explain_unknown_arguments(const CLI::App& app, std::ostream& err);

}  // namespace tensorgym::cli
