// Network files: parsing, the chain check and batch rewriting (see network.h).
#include "kernels/net/network.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernels/core/dataset.h"
#include "kernels/core/error.h"
#include "kernels/core/grammar.h"
#include "kernels/core/tensor.h"

namespace pb {

std::string layer_kind_str(LayerKind k) {
  static const char* n[] = {"input", "conv", "pool", "bnorm",  "act",     "fc",
                            "add",   "loss", "rnn",  "concat", "dropout", "lrn"};
  return n[static_cast<int>(k)];
}

std::string Shape::str() const {
  return std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w);
}

int64_t Layer::params() const {
  switch (kind) {
    case LayerKind::conv:
      return conv.wei_size() + (bias ? conv.oc : 0);
    case LayerKind::fc:
      return in.size() * fc_out + (bias ? fc_out : 0);
    case LayerKind::bnorm:
      return (bnorm.scale ? bnorm.ic : 0) + (bnorm.shift ? bnorm.ic : 0);
    case LayerKind::rnn:
      return rnn.gh() * (rnn.i + rnn.h) + rnn.bias_gates() * rnn.h;
    default:
      return 0;
  }
}

int64_t Network::params() const {
  int64_t n = 0;
  for (const Layer& l : layers) n += l.params();
  return n;
}

namespace {

// Every size of a network file below 2^31, as in the descriptors (BLAS and oneDNN take ints).
constexpr int64_t kMaxDim = int64_t(1) << 31;

LayerKind parse_kind(const std::string& s, const std::string& where) {
  for (int k = 0; k <= static_cast<int>(LayerKind::lrn); ++k)
    if (layer_kind_str(static_cast<LayerKind>(k)) == s) return static_cast<LayerKind>(k);
  throw InputError(where + ": kind", "'" + s +
                                         "' is not one of input, conv, pool, bnorm, act, fc, add, "
                                         "loss, rnn, concat, dropout, lrn");
}

// Checks that what a layer's descriptor expects equals what its input gives.
void expect(const std::string& where, const char* field, int64_t want, int64_t got,
            const std::string& from, const Shape& s) {
  if (want != got)
    throw InputError(where + ": " + field, "is " + std::to_string(want) + " but its input '" +
                                               from + "' gives " + std::to_string(got) + " (" +
                                               s.str() + ")");
}

// The descriptor's ic, ih, iw against the input's shape.
template <class Desc>
void expect_input(const std::string& where, const Desc& d, const std::string& from,
                  const Shape& s) {
  expect(where, "ic", d.ic, s.c, from, s);
  expect(where, "ih", d.ih, s.h, from, s);
  expect(where, "iw", d.iw, s.w, from, s);
}

}  // namespace

std::vector<std::string> Network::list() {
  std::vector<std::string> v;
  const std::string dir = data_dir() + "/networks";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".txt") v.push_back(e.path().stem().string());
  std::sort(v.begin(), v.end());
  return v;
}

Network Network::load(const std::string& name_or_path) {
  const bool is_path =
      name_or_path.size() > 4 && name_or_path.compare(name_or_path.size() - 4, 4, ".txt") == 0;
  const std::string file =
      is_path ? name_or_path : data_dir() + "/networks/" + name_or_path + ".txt";
  std::ifstream f(file);
  if (!f) {
    std::string known;
    for (const auto& n : list()) known += (known.empty() ? "" : ", ") + n;
    throw InputError("network", "'" + name_or_path + "' not found (known: " + known + ")");
  }
  return parse(f, file);
}

Network Network::parse(std::istream& f, const std::string& file) {
  Network net;
  net.file = file;
  net.name = std::filesystem::path(file).stem().string();
  std::string text;
  int lineno = 0;
  while (std::getline(f, text)) {
    ++lineno;
    const size_t hash = text.find('#');
    if (hash != std::string::npos) text.resize(hash);
    std::istringstream in(text);
    std::vector<std::string> tok;
    for (std::string t; in >> t;) tok.push_back(t);
    if (tok.empty()) continue;
    const std::string at = net.file + ":" + std::to_string(lineno);
    if (tok.size() < 2)
      throw InputError(at + ": kind", "missing after layer name '" + tok[0] + "'");
    Layer l;
    l.name = tok[0];
    l.line = lineno;
    const std::string where = at + " layer " + l.name;
    for (const Layer& o : net.layers)
      if (o.name == l.name)
        throw InputError(where + ": name", "repeats line " + std::to_string(o.line));
    l.kind = parse_kind(tok[1], where);
    std::string desc;
    std::vector<std::string> from;
    for (size_t i = 2; i < tok.size(); ++i) {
      if (tok[i] == "bias") {
        l.bias = true;
      } else if (tok[i][0] == '<') {
        std::string list = tok[i].substr(1);
        if (list.empty() && i + 1 < tok.size()) list = tok[++i];
        std::stringstream ss(list);
        for (std::string n; std::getline(ss, n, ',');)
          if (!n.empty()) from.push_back(n);
      } else if (desc.empty()) {
        desc = tok[i];
      } else {
        throw InputError(where + ": descriptor", "unexpected extra token '" + tok[i] + "'");
      }
    }
    if (l.bias && l.kind != LayerKind::conv && l.kind != LayerKind::fc)
      throw InputError(where + ": bias", "only conv and fc layers take a bias");
    // Inputs: named layers, else the previous one.
    if (l.kind != LayerKind::input) {
      if (from.empty()) {
        if (net.layers.empty())
          throw InputError(where + ": input", "the first layer must be input");
        l.inputs.push_back(static_cast<int>(net.layers.size()) - 1);
      }
      for (const auto& n : from) {
        auto it = std::find_if(net.layers.begin(), net.layers.end(),
                               [&](const Layer& o) { return o.name == n; });
        if (it == net.layers.end())
          throw InputError(where + ": input", "'" + n + "' is not an earlier layer");
        l.inputs.push_back(static_cast<int>(it - net.layers.begin()));
      }
      const size_t want = l.kind == LayerKind::add ? 2 : 1;
      if (l.kind == LayerKind::concat ? l.inputs.size() < 2 : l.inputs.size() != want)
        throw InputError(
            where + ": input",
            layer_kind_str(l.kind) + " takes " +
                (l.kind == LayerKind::concat ? std::string("2 or more") : std::to_string(want)) +
                " input(s), got " + std::to_string(l.inputs.size()));
      for (int i : l.inputs)
        if (net.layers[i].kind == LayerKind::loss)
          throw InputError(where + ": input", "'" + net.layers[i].name + "' is the loss");
      const Layer& p = net.layers[l.inputs[0]];
      l.in = p.out;
    } else if (!net.layers.empty()) {
      throw InputError(where + ": kind", "only the first layer is an input");
    }
    const std::string& src = l.inputs.empty() ? l.name : net.layers[l.inputs[0]].name;
    int64_t mb = 0;
    try {
      switch (l.kind) {
        case LayerKind::input: {
          FieldReader r("input", desc);
          for (const char* k : {"mb", "t", "c", "h", "w"}) r.allow_int(k);
          r.read();
          l.out = {r.get("c", 0), r.get("h", 1), r.get("w", r.get("h", 1))};
          mb = r.get("mb", 0);
          net.seq = r.get("t", 1);
          if (mb <= 0 || l.out.c <= 0 || l.out.h <= 0 || l.out.w <= 0)
            throw InputError("input", "needs mb, c, h (w) > 0, as in mb16c3h224");
          if (net.seq <= 0 || mb % net.seq != 0)
            throw InputError("t", "must be > 0 and divide mb (the positions), got t" +
                                      std::to_string(net.seq) + " for mb" + std::to_string(mb));
          for (const char* k : {"mb", "c", "h", "w"})
            if (r.get(k, 1) >= kMaxDim)
              throw InputError(k, "must be < 2^31, got " + std::to_string(r.get(k, 1)));
          check_fits_in_memory(4.0 * static_cast<double>(mb) * l.out.c * l.out.h * l.out.w,
                               "input (mb, c, h, w)");
          break;
        }
        case LayerKind::conv: {
          l.conv = ConvDesc::parse(desc);
          expect_input(where, l.conv, src, l.in);
          l.out = {l.conv.oc, l.conv.oh, l.conv.ow};
          mb = l.conv.mb;
          break;
        }
        case LayerKind::pool: {
          l.pool = PoolDesc::parse(desc);
          expect_input(where, l.pool, src, l.in);
          l.out = {l.pool.ic, l.pool.oh, l.pool.ow};
          mb = l.pool.mb;
          break;
        }
        case LayerKind::bnorm: {
          l.bnorm = BnormDesc::parse(desc);
          if (l.bnorm.inference)
            throw InputError(where + ": inf", "the executor picks training or inference itself");
          expect_input(where, l.bnorm, src, l.in);
          l.out = l.in;
          mb = l.bnorm.mb;
          break;
        }
        case LayerKind::act:
        case LayerKind::loss: {
          l.act = ActDesc::parse(desc);
          const bool loss = l.kind == LayerKind::loss;
          if (loss != (l.act.func == ActFunc::xent))
            throw InputError(where + ": func", loss ? "a loss layer runs xent"
                                                    : "act layers run relu, sigmoid or tanh");
          if (!loss && !l.act.eltwise())
            throw InputError(where + ": func", "act layers run relu, sigmoid or tanh");
          expect_input(where, l.act, src, l.in);
          l.out = loss ? Shape{1, 1, 1} : l.in;
          mb = l.act.mb;
          break;
        }
        case LayerKind::fc: {
          FieldReader r("fc", desc);
          r.allow_int("oc");
          r.read();
          l.fc_out = r.get("oc", 0);
          if (l.fc_out <= 0) throw InputError("oc", "fc needs oc > 0, as in oc1000");
          if (l.fc_out >= kMaxDim)
            throw InputError("oc", "must be < 2^31, got " + std::to_string(l.fc_out));
          // The weights, input features x oc (tools/fuzz: their count overflowed in params()).
          check_fits_in_memory(4.0 * static_cast<double>(l.in.size()) * l.fc_out,
                               "fc weights (input features x oc)");
          l.out = {l.fc_out, 1, 1};
          break;
        }
        case LayerKind::rnn: {
          l.rnn = RnnDesc::parse(desc);
          expect(where, "i", l.rnn.i, l.in.size(), src, l.in);
          expect(where, "t", l.rnn.t, net.seq, "input", net.layers[0].out);
          l.out = {l.rnn.h, 1, 1};
          mb = l.rnn.n * l.rnn.t;
          break;
        }
        case LayerKind::add: {
          const Layer& b = net.layers[l.inputs[1]];
          if (!(b.out == l.in))
            throw InputError(where + ": input", "'" + src + "' gives " + l.in.str() + " but '" +
                                                    b.name + "' gives " + b.out.str());
          l.out = l.in;
          break;
        }
        case LayerKind::lrn: {
          l.lrn = LrnDesc::parse(desc);
          expect_input(where, l.lrn, src, l.in);
          l.out = l.in;
          mb = l.lrn.mb;
          break;
        }
        case LayerKind::dropout: {
          FieldReader r("dropout", desc);
          r.allow_number("p");
          r.read();
          l.drop_p = r.number("p", -1);
          if (!(l.drop_p >= 0 && l.drop_p < 1))
            throw InputError("p", "dropout needs a probability 0 <= p < 1, as in p0.5");
          l.out = l.in;
          break;
        }
        case LayerKind::concat: {
          l.out = {0, l.in.h, l.in.w};
          for (int i : l.inputs) {
            const Layer& b = net.layers[i];
            if (b.out.h != l.in.h || b.out.w != l.in.w)
              throw InputError(where + ": input", "'" + src + "' gives " + l.in.str() + " but '" +
                                                      b.name + "' gives " + b.out.str() +
                                                      " (concat needs one height and width)");
            l.out.c += b.out.c;
          }
          if (l.out.c >= kMaxDim)
            throw InputError("c", "must be < 2^31, got " + std::to_string(l.out.c));
          break;
        }
      }
    } catch (const InputError& e) {
      if (e.field().rfind(at, 0) == 0) throw;
      throw InputError(where + ": " + e.field(),
                       std::string(e.what()).substr(e.field().size() + 2));
    }
    if (l.kind == LayerKind::input) {
      net.mb = mb;
    } else if (mb != 0 && mb != net.mb) {
      throw InputError(where + ": mb", "is " + std::to_string(mb) + " but the input batch is " +
                                           std::to_string(net.mb));
    }
    net.layers.push_back(std::move(l));
  }
  if (net.layers.empty()) throw InputError("network", net.file + " defines no layers");
  for (size_t i = 0; i + 1 < net.layers.size(); ++i)
    if (net.layers[i].kind == LayerKind::loss)
      throw InputError(net.file + ":" + std::to_string(net.layers[i].line) + " layer " +
                           net.layers[i].name + ": kind",
                       "the loss must be the last layer");
  return net;
}

Network Network::with_batch(int64_t samples) const {
  if (samples <= 0) throw InputError("batch", "must be > 0, got " + std::to_string(samples));
  Network n = *this;
  const int64_t mb = samples * seq;
  if (!layers.empty())
    check_fits_in_memory(4.0 * static_cast<double>(mb) * layers[0].out.size(),
                         "batch (the input at that batch)");
  n.mb = mb;
  for (Layer& l : n.layers) {
    l.conv.mb = l.pool.mb = l.bnorm.mb = l.act.mb = l.lrn.mb = mb;
    l.rnn.n = samples;
    if (l.kind == LayerKind::rnn) l.rnn.validate();
    if (l.kind == LayerKind::conv) l.conv.validate();
    if (l.kind == LayerKind::pool) l.pool.validate();
    if (l.kind == LayerKind::bnorm) l.bnorm.validate();
    if (l.kind == LayerKind::lrn) l.lrn.validate();
    if (l.kind == LayerKind::act || l.kind == LayerKind::loss) l.act.validate();
  }
  return n;
}

}  // namespace pb
