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

    def conv(self, name, oc, k, s=1, p=0, bias=False, src=None, c=None, h=None, g=1):
        c, h = c or self.c, h or self.h
        o = (h + 2 * p - k) // s + 1
        d = f"mb{self.mb}" + (f"g{g}" if g > 1 else "") + f"ic{c}ih{h}oc{oc}kh{k}" + \
            (f"sh{s}" if s > 1 else "") + (f"ph{p}" if p else "")
        self.add(name, "conv", d, "bias" if bias else "", src)
        self.c, self.h = oc, o

    def bn(self, name, src=None):
        self.add(name, "bnorm", f"mb{self.mb}ic{self.c}ih{self.h}_scale_shift", src=src)

    def act(self, name, f="relu", src=None):
        self.add(name, "act", f"{f}_mb{self.mb}ic{self.c}ih{self.h}", src=src)

    def pool(self, name, k, s, p=0, alg="max", ceil=False, src=None):
        o = (self.h + 2 * p - k) // s + 1
        out = f"oh{-(-(self.h + 2 * p - k) // s) + 1}" if ceil else ""  # PyTorch's ceil_mode
        if out == f"oh{o}":
            out = ""
        if out:
            o = int(out[2:])
            out += f"ow{o}"
        self.add(name, "pool", f"mb{self.mb}ic{self.c}ih{self.h}{out}kh{k}sh{s}" + (f"ph{p}" if p else "") + f"_{alg}",
                 src=src)
        self.h = o

    def lrn(self, name, k=1.0):
        self.add(name, "lrn", f"mb{self.mb}ic{self.c}ih{self.h}" + (f"_k{k:g}" if k != 1 else ""))

    def dropout(self, name, p=0.5):
        self.add(name, "dropout", f"p{p:g}")

    def concat(self, name, srcs, c):
        self.add(name, "concat", "", "", ",".join(srcs)); self.prev = name
        self.c = c

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


def alexnet_original():
    n = Net(16, 3, 227, ["AlexNet as Krizhevsky et al. (2012) trained it, in Caffe's bvlc_alexnet form: a 227x227",
                         "input, conv1 96 11x11/4, conv2, conv4 and conv5 in 2 groups (the two GPUs), LRN after",
                         "conv1 and conv2 (5 channels, alpha 1e-4 over the window, beta 0.75, k 2), overlapping",
                         "3x3/2 max pools, fc6 and fc7 of 4096 with dropout 0.5, fc 1000. 60,965,224 parameters.",
                         "Batch 16."])
    n.conv("conv1", 96, 11, 4, 0, True); n.act("relu1"); n.lrn("norm1", 2); n.pool("pool1", 3, 2)
    n.conv("conv2", 256, 5, 1, 2, True, g=2); n.act("relu2"); n.lrn("norm2", 2); n.pool("pool2", 3, 2)
    n.conv("conv3", 384, 3, 1, 1, True); n.act("relu3")
    n.conv("conv4", 384, 3, 1, 1, True, g=2); n.act("relu4")
    n.conv("conv5", 256, 3, 1, 1, True, g=2); n.act("relu5"); n.pool("pool5", 3, 2)
    n.fc("fc6", 4096); n.act("relu6"); n.dropout("drop6")
    n.fc("fc7", 4096); n.act("relu7"); n.dropout("drop7")
    n.fc("fc8", 1000); n.loss()
    n.write("alexnet_original")


def tiny_concat_lrn_dropout():
    n = Net(2, 4, 6, ["A tiny network for the checks of concat, LRN and dropout: a grouped convolution, LRN,",
                      "two branches concatenated, dropout before the classifier. Batch 2."])
    n.conv("conv1", 8, 3, 1, 1, True); n.act("relu1"); n.lrn("norm1", 2)
    n.conv("a", 4, 1, bias=True, src="norm1"); n.act("relu_a")
    n.conv("b", 6, 3, 1, 1, True, src="norm1", c=8, h=6, g=2); n.act("relu_b")
    n.concat("cat", ["relu_a", "relu_b"], 10)
    n.pool("pool", 6, 1, 0, "avgp")
    n.fc("fc1", 12); n.act("relu_fc"); n.dropout("drop", 0.25)
    n.fc("fc2", 5); n.loss()
    n.write("tiny_concat_lrn_dropout")


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


def lenet5():
    n = Net(64, 1, 28, ["LeNet-5 (LeCun et al. 1998) on MNIST, as the classic definition: the 28x28 digits padded",
                        "by 2 to the paper's 32x32 (conv1's padding), tanh, average-pool subsampling, C5 as a",
                        "5x5 convolution to 1x1, F6 84, 10 outputs through softmax cross-entropy (the paper's RBF",
                        "output layer is replaced, as every modern implementation does). C3 is fully connected",
                        "to S2's 6 maps (the paper's partial table gives C3 1,516 weights instead of 2,416).",
                        "61,706 parameters (the paper: 60,000). Batch 64."])
    n.conv("c1", 6, 5, 1, 2, True); n.act("tanh1", "tanh"); n.pool("s2", 2, 2, 0, "avgp")
    n.conv("c3", 16, 5, 1, 0, True); n.act("tanh3", "tanh"); n.pool("s4", 2, 2, 0, "avgp")
    n.conv("c5", 120, 5, 1, 0, True); n.act("tanh5", "tanh")
    n.fc("f6", 84); n.act("tanh6", "tanh"); n.fc("out", 10); n.loss()
    n.write("lenet5")


def alexnet_cifar():
    n = Net(128, 3, 32, ["AlexNet for CIFAR-10 (3x32x32, 10 classes) as bearpaw/pytorch-classification defines it:",
                         "AlexNet's 5 convolutions (conv1 11x11 stride 4, padding 5) with bias, ReLU, 3 max pools",
                         "2x2, one fully connected layer 256 -> 10. 2,472,266 parameters. Batch 128."])
    n.conv("conv1", 64, 11, 4, 5, True); n.act("relu1"); n.pool("pool1", 2, 2)
    n.conv("conv2", 192, 5, 1, 2, True); n.act("relu2"); n.pool("pool2", 2, 2)
    n.conv("conv3", 384, 3, 1, 1, True); n.act("relu3")
    n.conv("conv4", 256, 3, 1, 1, True); n.act("relu4")
    n.conv("conv5", 256, 3, 1, 1, True); n.act("relu5"); n.pool("pool5", 2, 2)
    n.fc("fc", 10); n.loss()
    n.write("alexnet_cifar")


def vgg16_cifar():
    n = Net(128, 3, 32, ["VGG-16 for CIFAR-10 (3x32x32, 10 classes) as kuangliu/pytorch-cifar defines it:",
                         "configuration D's 13 3x3 convolutions with bias, each followed by batch-norm and ReLU,",
                         "5 max pools to 1x1x512, one fully connected layer 512 -> 10. 14,728,266 parameters.",
                         "Batch 128."])
    for stage, (w, reps) in enumerate([(64, 2), (128, 2), (256, 3), (512, 3), (512, 3)], 1):
        for r in range(1, reps + 1):
            n.conv(f"conv{stage}_{r}", w, 3, 1, 1, True); n.bn(f"bn{stage}_{r}"); n.act(f"relu{stage}_{r}")
        n.pool(f"pool{stage}", 2, 2)
    n.fc("fc", 10); n.loss()
    n.write("vgg16_cifar")


def basic_conv(n, name, oc, k, s=1, p=0, src=None, c=None, h=None):
    """torchvision's BasicConv2d: convolution without bias, batch-norm (eps 0.001), ReLU."""
    n.conv(name, oc, k, s, p, src=src, c=c, h=h)
    n.add(f"{name}_bn", "bnorm", f"mb{n.mb}ic{n.c}ih{n.h}_scale_shift_eps0.001")
    n.act(f"{name}_relu")


def inception(n, name, c1, c3r, c3, c5r, c5, proj):
    src, c, h = n.prev, n.c, n.h
    ends = []
    basic_conv(n, f"{name}_1x1", c1, 1, src=src, c=c, h=h); ends.append(n.prev)
    basic_conv(n, f"{name}_3x3r", c3r, 1, src=src, c=c, h=h); basic_conv(n, f"{name}_3x3", c3, 3, 1, 1)
    ends.append(n.prev)
    # torchvision's "5x5" branch is a 3x3 convolution (its documented deviation, kept here).
    basic_conv(n, f"{name}_5x5r", c5r, 1, src=src, c=c, h=h); basic_conv(n, f"{name}_5x5", c5, 3, 1, 1)
    ends.append(n.prev)
    n.c, n.h = c, h
    n.pool(f"{name}_pool", 3, 1, 1, ceil=True, src=src); basic_conv(n, f"{name}_proj", proj, 1)
    ends.append(n.prev)
    n.concat(name, ends, c1 + c3 + c5 + proj)


def googlenet(name="googlenet", mb=16, header=None):
    n = Net(mb, 3, 224, header or [
        "GoogLeNet (Inception v1, Szegedy et al. 2015) as torchvision defines it: every convolution",
        "without bias and followed by batch-norm (eps 0.001) and ReLU (no LRN), max pools with",
        "ceil_mode, nine Inception modules whose '5x5' branch is a 3x3 convolution (torchvision's),",
        "channel concatenation of the four branches, global average pool, fc 1000. The auxiliary",
        "classifiers (training only in torchvision) and the dropout before fc are left out, in",
        "training too: 6,624,904 parameters, torchvision's count without them. Batch 16."])
    basic_conv(n, "conv1", 64, 7, 2, 3); n.pool("pool1", 3, 2, ceil=True)
    basic_conv(n, "conv2", 64, 1); basic_conv(n, "conv3", 192, 3, 1, 1); n.pool("pool2", 3, 2, ceil=True)
    inception(n, "inc3a", 64, 96, 128, 16, 32, 32)
    inception(n, "inc3b", 128, 128, 192, 32, 96, 64)
    n.pool("pool3", 3, 2, ceil=True)
    inception(n, "inc4a", 192, 96, 208, 16, 48, 64)
    inception(n, "inc4b", 160, 112, 224, 24, 64, 64)
    inception(n, "inc4c", 128, 128, 256, 24, 64, 64)
    inception(n, "inc4d", 112, 144, 288, 32, 64, 64)
    inception(n, "inc4e", 256, 160, 320, 32, 128, 128)
    n.pool("pool4", 2, 2, ceil=True)
    inception(n, "inc5a", 256, 160, 320, 32, 128, 128)
    inception(n, "inc5b", 384, 192, 384, 48, 128, 128)
    n.pool("avgpool", n.h, 1, 0, "avgp")
    n.fc("fc", 1000); n.loss()
    n.write(name)


def tiny_inception():
    n = Net(2, 3, 8, ["A tiny Inception network for the checks: a stem, one Inception module (four branches",
                      "concatenated, a ceil-mode pool), a residual-free head. Batch 2."])
    basic_conv(n, "conv1", 8, 3, 1, 1); n.pool("pool1", 3, 2, ceil=True)
    inception(n, "inc", 4, 4, 8, 2, 4, 4)
    n.pool("avgpool", n.h, 1, 0, "avgp")
    n.fc("fc", 5); n.loss()
    n.write("tiny_inception")


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
    # Shi et al.'s Table II counts: FCN-5 55M, FCN-8 58M, LSTM-32/64 13M, against 118.0M, 130.6M
    # and 6.18M from the layer sizes their text states (which the files above follow). A hidden
    # width of 1000 instead of 2048 gives 55.5M and 58.5M, both counts at once; an LSTM of 472
    # units (embedding and projection as wide) gives 13.0M. Offered as variants.
    mlp("fcn5_h1000", [26752, 1000, 1000, 1000, 26752], 64, "sigmoid",
        ["FCN-5 with 1000-wide hidden layers: the width that reproduces Shi et al.'s Table II count",
         "(55M; 55,533,752 here), where the stated 2048 gives 118.0M (fcn5). Batch 64."])
    mlp("fcn8_h1000", [26752] + [1000] * 6 + [26752], 64, "sigmoid",
        ["FCN-8 with 1000-wide hidden layers: the width that reproduces Shi et al.'s Table II count",
         "(58M; 58,536,752 here), where the stated 2048 gives 130.6M (fcn8). Batch 64."])
    for steps in (32, 64):
        lstm(f"lstm{steps}_h472", steps, 128,
             [f"LSTM-{steps} with 472 units (embedding, 2 LSTM layers, projection): the hidden size that",
              "reproduces Shi et al.'s Table II count (13M; 13,018,320 here), where the stated 256",
              f"gives 6.18M (lstm{steps}). Batch 128 sequences."], hidden=472)
    lenet5()
    alexnet_original()
    tiny_concat_lrn_dropout()
    googlenet()
    tiny_inception()
    alexnet_cifar()
    vgg16_cifar()
    resnet("resnet50_cifar", [3, 4, 6, 3], 128, 32,
           ["ResNet-50 for CIFAR-10 (3x32x32, 10 classes) as kuangliu/pytorch-cifar defines it: a 3x3",
            "stem of 64 without max pool, the bottleneck stages of ResNet-50 (stride 2 on the 3x3 of",
            "stages 3-5), global average pool over 4x4, fc 10. 23,520,842 parameters. Batch 128."],
           classes=10, stem=False).write("resnet50_cifar")
    lstm("tiny_lstm", 3, 2, ["A tiny 2-layer LSTM for the checks: 3 steps, batch 2, 7 features, 5 units."],
         vocab=7, hidden=5)
    resnet("tiny_resnet", [1, 1], 2, 12,
           ["A tiny ResNet for the checks (every layer kind, projection shortcuts, stride 2):",
            "reference composition and gradient tests run it at batch 2."],
           classes=10, widths=(4, 8), stem=False).write("tiny_resnet")
    mlp("tiny_mlp", [12, 8, 6, 5], 3, "tanh",
        ["A tiny MLP for the finite-difference gradient check."])
