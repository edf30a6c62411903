#include "datasets/json_text.h"

#include "model/common/error.h"
#include "model/common/input_file.h"

namespace kvbench {
namespace {

// "[json.exception.parse_error.101] parse error at ..." -> "parse error at ...".
std::string library_message(const nlohmann::json::exception& e) {
  const std::string what = e.what();
  const auto close = what.find("] ");
  return what.rfind("[json.exception.", 0) == 0 && close != std::string::npos
             ? what.substr(close + 2)
             : what;
}

template <class Json>
Json parse(std::string_view text, const std::string& source) {
  check_json_depth(text, source);
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    throw InputError(source + ": " + library_message(e));
  }
}

}  // namespace

void check_json_depth(std::string_view text, const std::string& source) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        throw InputError(source + ": nested deeper than " + std::to_string(kMaxJsonDepth) +
                         " levels (at byte " + std::to_string(i) + ")");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

nlohmann::json parse_json_text(std::string_view text, const std::string& source) {
  return parse<nlohmann::json>(text, source);
}

nlohmann::ordered_json parse_ordered_json_text(std::string_view text, const std::string& source) {
  return parse<nlohmann::ordered_json>(text, source);
}

nlohmann::json read_json_file_bounded(const std::string& path, size_t max_bytes) {
  return parse_json_text(read_regular_file(path, max_bytes, "a JSON file"), path);
}

}  // namespace kvbench
