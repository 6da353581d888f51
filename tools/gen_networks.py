#!/usr/bin/env python3
"""Writes data/networks/*.txt: the network definitions the executor runs (see kernels/net/network.h).
Re-run after changing a definition here; the .txt files are what the suite reads."""
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "networks")


class Net:
    def __init__(self, mb, c, h, header, t=1):
        # Sequences: mb counts positions (t steps of mb / t sequences), h is 1.
        shape = f"mb{mb}t{t}c{c}" if t > 1 else f"mb{mb}c{c}h{h}"
        self.lines = [f"# {l}" for l in header] + [f"data input {shape}"]
        self.mb, self.c, self.h, self.t, self.prev = mb, c, h, t, "data"

    def add(self, name, kind, desc="", extra="", src=None):
        frm = f" < {src}" if src and src != self.prev else ""
        self.lines.append(f"{name} {kind} {desc}{(' ' + extra) if extra else ''}{frm}".rstrip())
        self.prev = name

    def conv(self, name, oc, k, s=1, p=0, bias=False, src=None, c=None, h=None):
        c, h = c or self.c, h or self.h
        o = (h + 2 * p - k) // s + 1
        d = f"mb{self.mb}ic{c}ih{h}oc{oc}kh{k}" + (f"sh{s}" if s > 1 else "") + (f"ph{p}" if p else "")
        self.add(name, "conv", d, "bias" if bias else "", src)
        self.c, self.h = oc, o

    def bn(self, name, src=None):
        self.add(name, "bnorm", f"mb{self.mb}ic{self.c}ih{self.h}_scale_shift", src=src)

    def act(self, name, f="relu", src=None):
        self.add(name, "act", f"{f}_mb{self.mb}ic{self.c}ih{self.h}", src=src)

    def pool(self, name, k, s, p=0, alg="max"):
        o = (self.h + 2 * p - k) // s + 1
        self.add(name, "pool", f"mb{self.mb}ic{self.c}ih{self.h}kh{k}sh{s}" + (f"ph{p}" if p else "") + f"_{alg}")
        self.h = o

    def fc(self, name, oc, bias=True):
        self.add(name, "fc", f"oc{oc}", "bias" if bias else "")
        self.c, self.h = oc, 1

    def rnn(self, name, cell, hidden):
        i = "" if self.c == hidden else f"i{self.c}"
        self.add(name, "rnn", f"{cell}_h{hidden}n{self.mb // self.t}t{self.t}{i}")
        self.c = hidden

    def loss(self):
        self.add("loss", "loss", f"xent_mb{self.mb}ic{self.c}")

    def write(self, name):
        with open(os.path.join(OUT, name + ".txt"), "w") as f:
            f.write("\n".join(self.lines) + "\n")


def alexnet():
    n = Net(16, 3, 224, ["AlexNet, the 'One weird trick' variant (Krizhevsky 2014; torchvision's layers):",
                         "5 convolutions with bias, ReLU, 3 max pools, 3 fully connected layers, batch 16.",
                         "Dropout and LRN are left out (not timed primitives here)."])
    n.conv("conv1", 64, 11, 4, 2, True); n.act("relu1"); n.pool("pool1", 3, 2)
    n.conv("conv2", 192, 5, 1, 2, True); n.act("relu2"); n.pool("pool2", 3, 2)
    n.conv("conv3", 384, 3, 1, 1, True); n.act("relu3")
    n.conv("conv4", 256, 3, 1, 1, True); n.act("relu4")
    n.conv("conv5", 256, 3, 1, 1, True); n.act("relu5"); n.pool("pool5", 3, 2)
    n.fc("fc6", 4096); n.act("relu6", src=None); n.c, n.h = 4096, 1
    n.fc("fc7", 4096); n.act("relu7"); n.fc("fc8", 1000); n.loss()
    n.write("alexnet")


def vgg16():
    n = Net(16, 3, 224, ["VGG-16 (Simonyan & Zisserman 2014, configuration D): 13 3x3 convolutions with bias,",
                         "ReLU, 5 max pools, 3 fully connected layers, batch 16. Dropout left out."])
    i = 0
    for stage, (w, reps) in enumerate([(64, 2), (128, 2), (256, 3), (512, 3), (512, 3)], 1):
        for r in range(1, reps + 1):
            n.conv(f"conv{stage}_{r}", w, 3, 1, 1, True); n.act(f"relu{stage}_{r}")
        n.pool(f"pool{stage}", 2, 2)
    n.fc("fc6", 4096); n.act("relu6"); n.fc("fc7", 4096); n.act("relu7"); n.fc("fc8", 1000); n.loss()
    n.write("vgg16")


def bottleneck(n, name, w, stride, project):
    src, c, h = n.prev, n.c, n.h
    n.conv(f"{name}_conv1", w, 1); n.bn(f"{name}_bn1"); n.act(f"{name}_relu1")
    n.conv(f"{name}_conv2", w, 3, stride, 1); n.bn(f"{name}_bn2"); n.act(f"{name}_relu2")
    n.conv(f"{name}_conv3", 4 * w, 1); n.bn(f"{name}_bn3")
    main, oc, oh = n.prev, n.c, n.h
    short = src
    if project:
        n.conv(f"{name}_proj", 4 * w, 1, stride, src=src, c=c, h=h); n.bn(f"{name}_proj_bn")
        short = n.prev
    n.add(f"{name}_add", "add", "", "", f"{main},{short}"); n.prev = f"{name}_add"
    n.c, n.h = oc, oh
    n.act(f"{name}_relu")


def resnet(name, blocks, mb, h, header, classes=1000, widths=(64, 128, 256, 512), stem=True):
    n = Net(mb, 3, h, header)
    if stem:
        n.conv("conv1", widths[0], 7, 2, 3); n.bn("bn1"); n.act("relu1"); n.pool("pool1", 3, 2, 1)
    else:
        n.conv("conv1", widths[0], 3, 1, 1); n.bn("bn1"); n.act("relu1")
    for s, (w, reps) in enumerate(zip(widths, blocks), 2):
        for b in range(reps):
            bottleneck(n, f"res{s}{chr(97 + b)}", w, 2 if (b == 0 and s > 2) else 1, b == 0)
    n.pool("avgpool", n.h, 1, 0, "avgp")
    n.fc("fc", classes); n.loss()
    return n


def mlp(name, sizes, mb, f, header):
    n = Net(mb, sizes[0], 1, header)
    for i, s in enumerate(sizes[1:-1], 1):
        n.fc(f"h{i}", s); n.act(f"{f}{i}", f)
    n.fc("out", sizes[-1]); n.loss()
    n.write(name)


def lstm(name, steps, batch, header, vocab=10000, hidden=256, layers=2):
    n = Net(batch * steps, vocab, 1, header, t=steps)
    n.fc("embed", hidden, bias=False)  # one-hot words x the embedding matrix, as a GEMM
    for k in range(1, layers + 1):
        n.rnn(f"lstm{k}", "lstm", hidden)
    n.fc("proj", vocab); n.loss()
    n.write(name)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    alexnet()
    vgg16()
    resnet("resnet50", [3, 4, 6, 3], 16, 224,
           ["ResNet-50 v1.5 (He et al. 2016; torchvision/NVIDIA v1.5: the stride sits on the 3x3 of",
            "each stage's first bottleneck): convolutions without bias, batch-norm (scale, shift),",
            "ReLU, residual adds, 1x1 projection shortcuts, global average pool, fc 1000. Batch 16."]).write("resnet50")
    mlp("fcn5", [26752, 2048, 2048, 2048, 26752], 64, "sigmoid",
        ["FCN-5 of Shi et al. (2016): 26752 -> 3 x 2048 (sigmoid) -> 26752 classes, batch 64."])
    mlp("fcn8", [26752] + [2048] * 6 + [26752], 64, "sigmoid",
        ["FCN-8 of Shi et al. (2016): 26752 -> 6 x 2048 (sigmoid) -> 26752 classes, batch 64."])
    for steps in (32, 64):
        lstm(f"lstm{steps}", steps, 128,
             [f"LSTM-{steps} of Shi et al. (2016) on PTB: a 10000-word vocabulary, an embedding of 256",
              "(a GEMM with the one-hot words), 2 LSTM layers of 256 units (dlbench's defaults), the",
              f"softmax projection to 10000 words, cross-entropy at each of the {steps} steps. Batch 128",
              f"sequences: mb counts the {steps} x 128 positions. The synthetic input is dense, not",
              "one-hot: the GEMM's cost is the same."])
    lstm("tiny_lstm", 3, 2, ["A tiny 2-layer LSTM for the checks: 3 steps, batch 2, 7 features, 5 units."],
         vocab=7, hidden=5)
    resnet("tiny_resnet", [1, 1], 2, 12,
           ["A tiny ResNet for the checks (every layer kind, projection shortcuts, stride 2):",
            "reference composition and gradient tests run it at batch 2."],
           classes=10, widths=(4, 8), stem=False).write("tiny_resnet")
    mlp("tiny_mlp", [12, 8, 6, 5], 3, "tanh",
        ["A tiny MLP for the finite-difference gradient check."])
