#include "harness/cli/cli.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include "kvbench_build_info.h"  // generated: KVBENCH_GIT_COMMIT, KVBENCH_GIT_DIRTY
#include "model/common/error.h"
#include "model/common/input_file.h"
#include "model/common/printable.h"
#include "model/common/temporaries.h"
#include "model/llama_model.h"
#include "policies/policy_spec.h"
#include "policies/registry.h"

namespace po = boost::program_options;

namespace kvbench::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"info", "metadata, hyper-parameters and tensor types of a GGUF file", cmd_info},
      {"generate", "generate text from a prompt (greedy by default), streamed", cmd_generate},
      {"tokenize", "token ids of a text, one line", cmd_tokenize},
      {"logits", "next-token logits of a prompt (top K)", cmd_logits},
      {"perplexity", "perplexity of a text file", cmd_perplexity},
      {"tiny-model", "write a random-weight model: the tests' tiny one, or a real shape (--shape)",
       cmd_tiny_model},
      {"bench", "throughput like llama-bench: pp, tg, depth, threads, KV precision", cmd_bench},
      {"policies", "cache policies: every name, parameter, default; check a spec", cmd_policies},
      {"dataset", "task instances: generate, show, calibrate (full-cache accuracy)", cmd_dataset},
      {"run", "run an experiment: the benchmark table, plots and report", cmd_run},
      {"report",
       "re-render a run folder's table, plots and report; --versus A B pairs two policies",
       cmd_report},
      {"compare", "regression gate: compare two run folders (exit 1 on a score drop)", cmd_compare},
      {"merge",
       "merge the shards of an experiment, or its runs on other models, into one run folder",
       cmd_merge},
      {"pack", "pack a finished run's cells into one cells.jsonl.zst (for committing)", cmd_pack},
      {"submit", "run an experiment on Slurm: a job array, one shard per task", cmd_submit},
      {"history", "recall over commits: add run folders to an SQLite history; show; plot",
       cmd_history},
      {"cache", "cache snapshots: save a prefilled (compressed) document; info", cmd_cache},
      {"ask", "answer questions from a cache snapshot without recomputing it", cmd_ask},
      {"heads", "per-head retrieval scores, a calibration file for head-type policies (duo)",
       cmd_heads},
  };
  return table;
}

namespace {

void print_usage(std::ostream& os) {
  os << "kvbench — a benchmarking harness for KV-cache policies on a CPU LLaMA model\n\n"
        "usage: kvbench <command> [options]   (kvbench <command> --help for its options)\n\n"
        "commands:\n";
  for (const auto& c : commands()) {
    os << "  " << c.name << std::string(14 - c.name.size(), ' ') << c.summary << "\n";
  }
  os << "\nThe model defaults to $KVBENCH_MODEL, else models/SmolLM2-135M-Instruct.Q4_1.gguf.\n"
        "Exit codes: 0 done, 1 a check failed, 2 bad input or usage.\n";
}

// Boost's "too many positional options" names no argument; a user who left
// a value with spaces unquoted needs to see which word was left over. The
// words that are neither options nor an option's value are collected in
// order (an option's value is the next word when the option takes one and
// was not written --name=value); those past the command's slots are extra.
std::string extra_argument_message(const Args& args, const po::options_description& all,
                                   const po::positional_options_description* positional) {
  const unsigned slots = positional ? positional->max_total_count() : 0;
  std::vector<std::string> loose;
  bool options_end = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& w = args[i];
    if (options_end || w.size() < 2 || w[0] != '-') {
      loose.push_back(w);
      continue;
    }
    if (w == "--") {
      options_end = true;
      continue;
    }
    const bool long_form = w[1] == '-';
    const std::string name = long_form ? w.substr(2, w.find('=') - 2) : w.substr(1, 1);
    const bool inline_value = long_form ? w.find('=') != std::string::npos : w.size() > 2;
    const po::option_description* d = all.find_nothrow(name, false, false, !long_form);
    if (d && !inline_value && d->semantic()->max_tokens() > 0) ++i;  // its value
  }
  if (loose.size() <= slots) return "too many arguments (quote a value that holds spaces)";
  return "unexpected argument '" + escaped_text(loose[slots], 200) + "' (" +
         (slots == 0 ? std::string("this command takes no file or folder argument")
                     : "this command takes at most " + std::to_string(slots) + " argument" +
                           (slots == 1 ? "" : "s")) +
         "; quote a value that holds spaces)";
}

}  // namespace

AttentionMode attention_option(const std::string& value, bool exact) {
  const std::optional<AttentionMode> m = parse_attention_mode(value);
  if (!m)
    throw InputError("--attention: unknown value '" + value.substr(0, 40) + "' (" +
                     std::string(kAttentionModes) + ")");
  if (*m != AttentionMode{} && exact)
    throw InputError("--attention " + value +
                     " needs the fast mode (8-bit activations), not the exact reference path");
  return *m;
}

bool parse(const Args& args, const po::options_description& desc, po::variables_map& vm,
           std::string_view usage, const po::positional_options_description* positional) {
  po::options_description all;
  all.add_options()("help,h", "show this help");
  all.add(desc);
  try {
    po::command_line_parser parser(args);
    parser.options(all);
    if (positional)
      parser.positional(*positional);
    else
      parser.positional(po::positional_options_description());
    po::store(parser.run(), vm);
    if (vm.count("help")) {
      std::cout << "usage: " << usage << "\n\n" << all;
      return false;
    }
    po::notify(vm);
  } catch (const po::too_many_positional_options_error&) {
    throw InputError(extra_argument_message(args, all, positional));
  } catch (const po::error& e) {
    throw InputError(e.what());
  }
  return true;
}

void add_model_options(po::options_description& desc) {
  desc.add_options()("model,m", po::value<std::string>(),
                     "GGUF model file (default: $KVBENCH_MODEL or "
                     "models/SmolLM2-135M-Instruct.Q4_1.gguf)")(
      "threads,t", po::value<int>(), "worker threads (default: all cores)");
}

void add_prompt_options(po::options_description& desc) {
  desc.add_options()("prompt,p", po::value<std::string>()->required(), "prompt text")(
      "chat", po::bool_switch(), "wrap the prompt in the model's chat template");
}

void add_chunk_option(po::options_description& desc, const char* help) {
  desc.add_options()("chunk", po::value<int>()->default_value(512), help);
}

void add_policy_option(po::options_description& desc, const char* help) {
  desc.add_options()("policy",
                     po::value<std::string>()->default_value(std::string(kReferencePolicy)), help);
}

void add_fast_option(po::options_description& desc, const char* help) {
  desc.add_options()("fast", po::bool_switch(), help);
}

std::string model_path(const po::variables_map& vm) {
  return vm.count("model") ? vm["model"].as<std::string>() : default_model_path();
}

int thread_count(const po::variables_map& vm) {
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (!vm.count("threads")) return hw;
  const int n = vm["threads"].as<int>();
  if (n < 1 || n > 512)
    throw InputError("--threads must be between 1 and 512, got " + std::to_string(n));
  return n;
}

std::string read_text_file(const std::string& path) {
  return read_regular_file(path, kMaxTextBytes, "a text file");
}

PolicySpec policy_option(const std::string& text) {
  try {
    return parse_policy_spec(text);
  } catch (const InputError& e) {
    throw InputError(std::string("--policy: ") + e.what());
  }
}

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  // SIGINT/SIGTERM/SIGHUP: temporaries removed, gnuplot killed, exit
  // 128 + the signal (model/common/temporaries.h).
  install_exit_cleanup();
  if (argc < 2) {
    print_usage(std::cerr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage(std::cout);
    return 0;
  }
  if (name == "--version") {
    // The commit the binary was built from, as run folders record it: what a
    // figure timed with this binary should cite.
    std::cout << "kvbench " << KVBENCH_VERSION << " (commit " << KVBENCH_GIT_COMMIT
              << (KVBENCH_GIT_DIRTY ? ", built with uncommitted changes" : "") << ")\n";
    return 0;
  }
  // An error is one line whatever it quotes (a spec, a path, a value given on
  // the command line): control characters and invalid UTF-8 become visible
  // escapes; escapes the message already holds stay as they are.
  auto one_line = [](std::string_view text) { return escaped_text(text, text.size(), false); };
  Args args(argv + 2, argv + argc);
  for (const auto& c : commands()) {
    if (c.name != name) continue;
    try {
      return c.run(args);
    } catch (const InputError& e) {
      std::cout.flush();
      std::cerr << "error: " << one_line(e.what()) << "\n";
      return 2;
    } catch (const std::bad_alloc&) {
      std::cerr << "error: out of memory\n";
      return 2;
    } catch (const std::filesystem::filesystem_error& e) {
      // A path the system refuses (too long, a loop of links, no permission)
      // is bad input like any other: one line naming it.
      std::cout.flush();
      std::cerr << "error: " << one_line(e.path1().string()) << ": " << e.code().message() << "\n";
      return 2;
    }
  }
  std::string names;
  for (const auto& c : commands()) names += (names.empty() ? "" : ", ") + std::string(c.name);
  std::cerr << "error: unknown command '" << one_line(name) << "' (commands: " << names << ")\n";
  return 2;
}

}  // namespace kvbench::cli
