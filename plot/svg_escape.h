// Text made safe to place inside an SVG (XML) element or attribute.
#pragma once

#include <string>

namespace tensorgym {

// Escapes <, >, & and ".
std::string svg_escape(const std::string& text);

}  // namespace tensorgym
