// Chat templates: the file's tokenizer.chat_template is recognised as one of
// the well-known formats (ChatML, Llama-2 [INST], Llama-3, Zephyr, Gemma,
// Phi-3) and rendered natively; a full Jinja engine is out of scope.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kvbench {

class GgufFile;

struct ChatMessage {
  std::string role;  // "system" | "user" | "assistant"
  std::string content;
};

class ChatTemplate {
 public:
  enum class Kind { ChatML, Llama2, Llama3, Zephyr, Gemma, Phi3 };
  // From tokenizer.chat_template; a file without one gets ChatML (Gemma for
  // a gemma3 file). An
  // unrecognised template throws InputError naming the file.
  static ChatTemplate from_gguf(const GgufFile& file);
  static ChatTemplate of_kind(Kind kind, std::string default_system = "");

  Kind kind() const { return kind_; }
  std::string_view name() const;
  // Renders the conversation; with add_generation_prompt the assistant turn is
  // opened. Text contains special-token spellings: encode with parse_special.
  // A bos_token the template writes at the very start is left out: encode's
  // add_bos supplies it (later ones, as in Llama-2 histories, are kept).
  std::string apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

 private:
  Kind kind_ = Kind::ChatML;
  std::string default_system_;  // SmolLM2's template inserts one when absent
  // Spellings of BOS/EOS where a template writes bos_token / eos_token
  // (Llama-2 turns, Zephyr turn ends); taken from the vocabulary when known.
  std::string bos_text_ = "<s>";
  std::string eos_text_ = "</s>";
};

}  // namespace kvbench
