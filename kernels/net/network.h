// A network definition: data/networks/<name>.txt, one layer per line, each with the primitive
// descriptor it runs (conv, pool, bnorm, act) or a small layer spec (input, fc, add, loss).
// Loading checks that the layers chain: every input shape is its producer's output shape.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "kernels/act/desc.h"
#include "kernels/bnorm/desc.h"
#include "kernels/conv/desc.h"
#include "kernels/lrn/desc.h"
#include "kernels/pool/desc.h"
#include "kernels/rnn/desc.h"

namespace pb {

// Line grammar:  <layer> <kind> [<descriptor>] [bias] [< <in>[,<in>]]   # comment
//   input  mb<N>c<C>h<H>[w<W>]               the batch of images (or feature vectors: h1)
//   input  mb<P>t<T>c<C>                      sequences: P = N * T positions (step-major) of C
//                                             features, a batch of N sequences of T steps
//   conv   <conv descriptor> [bias]           + a per-channel bias when `bias` is given
//   pool   <pool descriptor>
//   bnorm  <bnorm descriptor>                 training: batch statistics; inference: running
//                                             ones, calibrated on the synthetic batch
//   act    <act descriptor>                   relu / sigmoid / tanh
//   fc     oc<N> [bias]                       fully connected over the flattened input (GEMM;
//                                             per position in a sequence: an embedding, the
//                                             softmax projection)
//   rnn    <rnn descriptor>                   an LSTM / GRU / RNN layer over the sequence (n N,
//                                             t T), zero initial state
//   add    < a,b                              elementwise sum (residual)
//   concat < a,b[,c...]                       channels of a, then b, ... (Inception's branches):
//                                             the inputs agree in height and width
//   lrn    <lrn descriptor>                   local response normalisation across channels
//   dropout p<P>                              training: each element kept with probability 1-P
//                                             and scaled by 1/(1-P), a new seeded mask every
//                                             step; inference: the identity (no call)
//   loss   <act descriptor with xent>         softmax cross-entropy over the classes
// The input is the previous line's layer unless `< name[,name]` says otherwise. The mb of every
// descriptor is the batch (sequences: the positions N * T); the executor rewrites it for other
// batch sizes.
enum class LayerKind { input, conv, pool, bnorm, act, fc, add, loss, rnn, concat, dropout, lrn };
std::string layer_kind_str(LayerKind k);

struct Shape {
  int64_t c = 0, h = 1, w = 1;
  int64_t size() const { return c * h * w; }
  bool operator==(const Shape& o) const { return c == o.c && h == o.h && w == o.w; }
  std::string str() const;  // "64x56x56"
};

struct Layer {
  std::string name;
  LayerKind kind = LayerKind::input;
  std::vector<int> inputs;  // indices of producer layers
  bool bias = false;        // conv, fc
  ConvDesc conv;
  PoolDesc pool;
  BnormDesc bnorm;
  ActDesc act;         // act, loss
  RnnDesc rnn;         // rnn
  LrnDesc lrn;         // lrn
  int64_t fc_out = 0;  // fc: output features
  double drop_p = 0;   // dropout: the probability of dropping an element
  Shape in, out;       // per image
  int line = 0;
  int64_t params() const;  // trainable parameters (weights + bias + scale/shift)
};

struct Network {
  std::string name, file;
  int64_t mb = 0;   // images, feature vectors or sequence positions
  int64_t seq = 1;  // time steps per sample (sequence networks; 1 otherwise)
  std::vector<Layer> layers;

  // Loads data/networks/<name>.txt (or a path ending in .txt); throws InputError naming
  // "<file>:<line> layer <name>: <field>" when a line is malformed or does not chain.
  static Network load(const std::string& name_or_path);
  // The same from a stream of network-file lines; `file` names it in messages.
  static Network parse(std::istream& in, const std::string& file);
  static std::vector<std::string> list();  // available network names
  // Samples per batch: images, vectors or sequences (mb / seq).
  int64_t batch() const { return mb / seq; }
  // The same network at another batch of samples (every descriptor's mb rewritten).
  Network with_batch(int64_t samples) const;
  int64_t params() const;
  bool has_loss() const { return !layers.empty() && layers.back().kind == LayerKind::loss; }
};

}  // namespace pb
