// Native renderers for the common chat formats. Each reproduces the output of
// the model's Jinja template (as Hugging Face renders it, trim_blocks on) for
// plain system/user/assistant conversations, so no Jinja engine is needed.
#include "model/tokenizer/chat_template.h"

#include "model/common/enum_names.h"
#include "model/common/error.h"
#include "model/gguf/gguf.h"

namespace kvbench {
namespace {

bool contains(std::string_view s, std::string_view what) {
  return s.find(what) != std::string_view::npos;
}

// Jinja's `| trim` / Python's str.strip() on the ASCII whitespace that
// matters for chat text.
std::string trim(std::string_view s) {
  const char* ws = " \t\n\r\v\f";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(ws);
  return std::string(s.substr(b, e - b + 1));
}

// The default system prompt a ChatML template writes when the conversation
// has none: the first constant string literal of the form
//   '<|im_start|>system\n<prompt><|im_end|>'
// (SmolLM2, Qwen2.5). A literal that continues with an expression (the
// branch that prints the user's own system message) is not constant and is
// skipped. Returns "" when there is none.
std::string extract_default_system(std::string_view tmpl) {
  static constexpr std::string_view kOpen = "<|im_start|>system";
  static constexpr std::string_view kClose = "<|im_end|>";
  for (size_t at = tmpl.find(kOpen); at != std::string_view::npos; at = tmpl.find(kOpen, at + 1)) {
    size_t p = at + kOpen.size();
    // The newline is either a real one or a Jinja escape inside the literal.
    if (tmpl.compare(p, 1, "\n") == 0) {
      p += 1;
    } else if (tmpl.compare(p, 2, "\\n") == 0) {
      p += 2;
    } else {
      continue;
    }
    const size_t end = tmpl.find(kClose, p);
    if (end == std::string_view::npos) break;
    const std::string_view body = tmpl.substr(p, end - p);
    if (body.empty() || body.find_first_of("'\"{}+") != std::string_view::npos) continue;
    std::string out;
    for (size_t i = 0; i < body.size(); ++i) {
      if (body[i] == '\\' && i + 1 < body.size()) {
        const char e = body[++i];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      } else {
        out += body[i];
      }
    }
    return out;
  }
  return {};
}

std::string token_text(const GgufFile& f, const char* id_key, std::string fallback) {
  if (!f.has(id_key) || !f.has("tokenizer.ggml.tokens")) return fallback;
  const uint64_t i = f.get_u64(id_key);
  const auto list = f.get_string_array("tokenizer.ggml.tokens");
  if (i >= list.size()) return fallback;  // the tokenizer reports bad ids
  return list[i].empty() ? fallback : std::string(list[i]);
}

}  // namespace

ChatTemplate ChatTemplate::of_kind(Kind kind, std::string default_system) {
  ChatTemplate t;
  t.kind_ = kind;
  t.default_system_ = std::move(default_system);
  return t;
}

ChatTemplate ChatTemplate::from_gguf(const GgufFile& file) {
  if (!file.has("tokenizer.chat_template")) {
    // Gemma 3 GGUFs of the base model carry no template: they get Gemma's
    // own turn format (<start_of_turn>user ... <end_of_turn>), any other file
    // ChatML.
    if (file.get_string_or("general.architecture", "") == "gemma3") return of_kind(Kind::Gemma);
    return of_kind(Kind::ChatML);
  }
  const std::string& tmpl = file.get_string("tokenizer.chat_template");
  ChatTemplate t;
  // Order matters: Phi-3 templates also contain "<|user|>" (Zephyr's marker).
  if (contains(tmpl, "<|im_start|>")) {
    t.kind_ = Kind::ChatML;
    t.default_system_ = extract_default_system(tmpl);
  } else if (contains(tmpl, "<|start_header_id|>")) {
    t.kind_ = Kind::Llama3;
  } else if (contains(tmpl, "[INST]")) {
    t.kind_ = Kind::Llama2;
  } else if (contains(tmpl, "<|end|>") && contains(tmpl, "<|assistant|>")) {
    t.kind_ = Kind::Phi3;
  } else if (contains(tmpl, "<|user|>")) {
    t.kind_ = Kind::Zephyr;
  } else if (contains(tmpl, "<start_of_turn>")) {
    t.kind_ = Kind::Gemma;
  } else {
    std::string head = tmpl.substr(0, 60);
    for (char& c : head) {
      if (c == '\n') c = ' ';
    }
    throw InputError(
        file.path() +
        ": tokenizer.chat_template: unrecognised chat template (not ChatML, Llama-2, " +
        "Llama-3, Zephyr, Gemma " + "or Phi-3): \"" + head + (tmpl.size() > 60 ? "...\"" : "\""));
  }
  t.bos_text_ = token_text(file, "tokenizer.ggml.bos_token_id", t.bos_text_);
  t.eos_text_ = token_text(file, "tokenizer.ggml.eos_token_id", t.eos_text_);
  // StableLM-style Zephyr templates spell the turn end out instead of eos_token.
  if (t.kind_ == Kind::Zephyr && contains(tmpl, "<|endoftext|>")) t.eos_text_ = "<|endoftext|>";
  return t;
}

std::string_view ChatTemplate::name() const {
  static constexpr std::string_view names[] = {"chatml", "llama2", "llama3",
                                               "zephyr", "gemma",  "phi3"};
  return enum_name<Kind::Phi3>(kind_, names, "chatml");
}

std::string ChatTemplate::apply(const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt) const {
  std::string out;
  switch (kind_) {
    case Kind::ChatML: {
      // SmolLM2: {% if loop.first and messages[0]['role'] != 'system' %} ...
      if (!default_system_.empty() && !messages.empty() && messages.front().role != "system") {
        out += "<|im_start|>system\n" + default_system_ + "<|im_end|>\n";
      }
      for (const auto& m : messages)
        out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      if (add_generation_prompt) out += "<|im_start|>assistant\n";
      break;
    }
    case Kind::Llama3: {
      for (const auto& m : messages) {
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + trim(m.content) +
               "<|eot_id|>";
      }
      if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
    }
    case Kind::Llama2: {
      // Meta's template: a leading system message is folded into the first
      // turn as <<SYS>>; each user turn is bos + "[INST] ... [/INST]", each
      // answer " ... " + eos. The assistant turn is already open after
      // [/INST], so add_generation_prompt adds nothing.
      size_t first = 0;
      std::string system;
      if (!messages.empty() && messages[0].role == "system") {
        system = messages[0].content;
        first = 1;
      }
      bool first_turn = true;
      for (size_t i = first; i < messages.size(); ++i) {
        const auto& m = messages[i];
        std::string content = m.content;
        if (i == first && first == 1) content = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content;
        if (m.role == "user") {
          if (!first_turn) out += bos_text_;
          out += "[INST] " + trim(content) + " [/INST]";
        } else if (m.role == "assistant") {
          out += " " + trim(content) + " " + eos_text_;
        }
        first_turn = false;
      }
      break;
    }
    case Kind::Zephyr: {
      for (const auto& m : messages) out += "<|" + m.role + "|>\n" + m.content + eos_text_ + "\n";
      if (add_generation_prompt) out += "<|assistant|>\n";
      break;
    }
    case Kind::Gemma: {
      // Gemma has no system role; like llama.cpp, it is merged into the next
      // user turn rather than rejected.
      std::string system;
      for (const auto& m : messages) {
        if (m.role == "system") {
          system += trim(m.content);
          continue;
        }
        const std::string role = m.role == "assistant" ? "model" : m.role;
        out += "<start_of_turn>" + role + "\n";
        if (!system.empty() && role != "model") {
          out += system + "\n\n";
          system.clear();
        }
        out += trim(m.content) + "<end_of_turn>\n";
      }
      if (add_generation_prompt) out += "<start_of_turn>model\n";
      break;
    }
    case Kind::Phi3: {
      for (const auto& m : messages) out += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
      if (add_generation_prompt) out += "<|assistant|>\n";
      break;
    }
  }
  return out;
}

}  // namespace kvbench
