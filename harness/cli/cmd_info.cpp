// kvbench info: what a GGUF file holds — header, metadata, hyper-parameters
// and the tensor types (counts, and every tensor with --tensors). Any
// architecture: the hyper-parameters, tokenizer and KV size only for the ones
// kvbench runs; for the others the metadata and tensors alone.
#include <iostream>
#include <map>

#include "harness/cli/cli.h"
#include "model/common/printable.h"
#include "model/gguf/gguf.h"
#include "model/llama_model.h"

namespace po = boost::program_options;

namespace kvbench::cli {

int cmd_info(const Args& args) {
  po::options_description desc("options");
  add_model_options(desc);
  desc.add_options()("tensors", po::bool_switch(), "list every tensor with its type and shape");
  po::variables_map vm;
  if (!parse(args, desc, vm, "kvbench info [--model PATH] [--tensors]")) return 0;
  const std::string path = model_path(vm);
  // Read fully first, so a bad file prints nothing but the error line: the
  // whole model when kvbench runs its architecture, else the GGUF alone.
  auto file = GgufFile::open(path);
  const std::string arch = file->get_string_or("general.architecture", "");
  std::unique_ptr<LlamaModel> model;
  if (runs_architecture(arch)) {
    file.reset();
    model = LlamaModel::load(path, /*planar_copies=*/false);  // no products
  }
  const GgufFile& f = model ? model->file() : *file;

  std::ostringstream out;
  out << "file: " << path << "\n"
      << "gguf version: " << f.version() << ", alignment " << f.alignment() << ", " << f.file_size()
      << " bytes, " << f.metadata().size() << " metadata keys, " << f.tensors().size()
      << " tensors\n\nmetadata:\n";
  for (const auto& [key, value] : f.metadata())
    out << "  " << escaped_text(key, 256) << " = " << value.to_display() << "\n";
  if (model) {
    const LlamaConfig& c = model->config();
    const LayerWeights& first = model->weights().layers[0];
    out << "\nmodel: " << escaped_text(c.name, 256) << "\n"
        << "  layers " << c.n_layers << ", dim " << c.dim << ", ffn " << c.ffn_dim << ", heads "
        << c.n_heads << " (kv " << c.n_kv_heads << ", head_dim " << c.head_dim << "), vocab "
        << c.n_vocab << ", context " << c.n_ctx_train << "\n"
        << "  rope: dims " << c.rope.n_dims << ", base " << c.rope.freq_base << ", scale "
        << c.rope.freq_scale
        << (c.rope.freq_factors.empty() ? ""
            : c.arch_name == "phi3"     ? ", LongRoPE short factors"
                                        : ", llama3 freq factors")
        << (c.rope.attn_factor != 1.0f ? ", attention factor " + std::to_string(c.rope.attn_factor)
                                       : std::string())
        << "\n"
        << (c.rope.neox ? "  rope pairs: halves (neox)\n" : "")
        << "  block: " << (c.norms.pre_attention ? "pre-norms" : "no pre-norms")
        << (first.bq.empty() ? "" : ", Q/K/V biases") << (c.norms.qk ? ", QK-norms" : "")
        << (c.norms.post_attention ? ", post-norms" : "")
        << (c.activation == Activation::Silu ? ", SwiGLU" : ", GeGLU")
        << (c.fused_gate_up ? " (gate and up fused in ffn_up)" : "") << "\n"
        << "  rms eps " << c.rms_eps << ", output "
        << (model->weights().tied_output ? "tied to token_embd" : "output.weight") << "\n"
        << "  tokenizer: " << model->tokenizer().model_name() << " / "
        << model->tokenizer().pre_name() << ", chat template " << model->chat_template().name()
        << "\n"
        << "  full-cache KV bytes per token (f32): "
        << uint64_t{2} * c.n_layers * c.n_kv_heads * c.head_dim * 4 << "\n";
    if (!c.rope_long_factors.empty())
      out << "  LongRoPE: short factors for a context of up to " << c.n_ctx_orig
          << " tokens (phi3.rope.scaling.original_context_length), long factors beyond, as "
             "llama.cpp; `run` takes the long ones when its longest sequence exceeds it\n";
    if (c.unapplied_sliding_window > 0)
      out << "  sliding window " << c.unapplied_sliding_window
          << " stated, not applied: every layer attends every key, as llama.cpp runs "
          << (c.arch_name == "phi3" ? "Phi-3 (its Phi SWA is disabled)" : "this architecture")
          << "\n";
    if (c.arch_name == "gemma3" || c.arch_name == "gemma2") {
      std::string global;
      int n_local = 0;
      for (int l = 0; l < c.n_layers; ++l) {
        if (c.local[l])
          ++n_local;
        else
          global += (global.empty() ? "" : ", ") + std::to_string(l);
      }
      out << "  " << c.arch_name << ": " << n_local << " local layers (sliding window "
          << c.sliding_window << ", rope base " << c.rope_local.freq_base << "), global layers "
          << (global.empty() ? "none" : global) << "; attention scale " << c.attn_scale
          << ", embedding scale " << c.embed_scale << ", logit soft-cap ";
      if (c.final_logit_softcap > 0)
        out << c.final_logit_softcap;
      else
        out << "none";
      if (c.attn_logit_softcap > 0) out << ", attention soft-cap " << c.attn_logit_softcap;
      out << "\n";
    }
  } else {
    out << "\nmodel: architecture '" << escaped_text(arch, 64)
        << "', which kvbench does not run (it runs " << architecture_names()
        << "): commands that run a model refuse this file\n";
  }

  std::map<std::string, std::pair<int, uint64_t>> by_type;
  for (const auto& t : f.tensors()) {
    auto& e = by_type[std::string(type_name(t.type))];
    e.first += 1;
    e.second += t.bytes;
  }
  out << "\ntensor types:\n";
  for (const auto& [name, e] : by_type)
    out << "  " << name << ": " << e.first << " tensors, " << e.second << " bytes\n";
  if (vm["tensors"].as<bool>()) {
    out << "\ntensors:\n";
    for (const auto& t : f.tensors()) {
      out << "  " << escaped_text(t.name, 256) << "  " << type_name(t.type) << "  [";
      for (int i = 0; i < t.n_dims; ++i) out << (i ? ", " : "") << t.ne[i];
      out << "]\n";
    }
  }
  std::cout << out.str();
  return 0;
}

}  // namespace kvbench::cli
