// The kvbench command line: a table of subcommands, each a function taking
// its own arguments. Bad input of any kind ends as one line "error: <what>"
// on stderr and exit code 2; --help on every subcommand.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <boost/program_options.hpp>

#include "model/attention_mode.h"

namespace kvbench {
struct PolicySpec;
}  // namespace kvbench

namespace kvbench::cli {

using Args = std::vector<std::string>;

struct Command {
  std::string_view name;
  std::string_view summary;
  int (*run)(const Args& args);
};

const std::vector<Command>& commands();
int main(int argc, char** argv);

// Parses args against `desc` (positional names optional). Returns false when
// --help was given (usage printed to stdout). Throws InputError on bad usage.
bool parse(const Args& args, const boost::program_options::options_description& desc,
           boost::program_options::variables_map& vm, std::string_view usage,
           const boost::program_options::positional_options_description* positional = nullptr);

// Options most subcommands share: --model PATH and --threads N.
void add_model_options(boost::program_options::options_description& desc);
std::string model_path(const boost::program_options::variables_map& vm);
int thread_count(const boost::program_options::variables_map& vm);  // validated

// Options of the same name, meaning and default in several subcommands, added
// by one function each so their defaults cannot drift apart. A subcommand adds
// them where its --help lists them.
// --prompt,-p TEXT (required) and --chat (wrap it in the chat template).
void add_prompt_options(boost::program_options::options_description& desc);
// --chunk N, default 512.
void add_chunk_option(boost::program_options::options_description& desc,
                      const char* help = "prefill chunk size in tokens");
// --policy SPEC, default the reference policy.
void add_policy_option(boost::program_options::options_description& desc, const char* help);
// --fast: 8-bit activations instead of the exact f32 path.
void add_fast_option(boost::program_options::options_description& desc,
                     const char* help =
                         "multiply with activations quantized to 8 bits, as "
                         "llama.cpp and `kvbench run` do (default here: f32 "
                         "activations, the exact reference path)");
// The value of --attention (f32, bf16, int8q or bf16+int8q,
// model/attention_mode.h). Anything but f32 needs the fast mode:
// exact = true with another value throws InputError, as does any other text.
AttentionMode attention_option(const std::string& value, bool exact);

// Reads a whole text file; InputError naming it when unreadable.
std::string read_text_file(const std::string& path);

// The policy a --policy option's text names; its InputError says
// "--policy: " first.
PolicySpec policy_option(const std::string& text);

// Subcommands (one file each).
int cmd_info(const Args& args);
int cmd_generate(const Args& args);
int cmd_tokenize(const Args& args);
int cmd_logits(const Args& args);
int cmd_perplexity(const Args& args);
int cmd_tiny_model(const Args& args);
int cmd_bench(const Args& args);
int cmd_policies(const Args& args);
int cmd_dataset(const Args& args);
int cmd_run(const Args& args);
int cmd_report(const Args& args);
int cmd_compare(const Args& args);
int cmd_merge(const Args& args);
int cmd_pack(const Args& args);
int cmd_submit(const Args& args);
int cmd_cache(const Args& args);
int cmd_ask(const Args& args);
int cmd_heads(const Args& args);
int cmd_history(const Args& args);

}  // namespace kvbench::cli
