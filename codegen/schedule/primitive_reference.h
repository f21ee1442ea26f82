// The reference table of every registered primitive, in Markdown: the table that
// docs/schedule_primitives.md shows (a test checks that the two are the same).
#pragma once

#include <string>

namespace tensorgym {

std::string primitive_reference_markdown();

}  // namespace tensorgym
