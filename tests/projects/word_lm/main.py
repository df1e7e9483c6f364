"""Train the LSTM language model with truncated backpropagation through time."""
import argparse
import math

import torch
import torch.nn as nn

import data
import model


def parse_args():
    parser = argparse.ArgumentParser(description="Word-level LSTM language model")
    parser.add_argument("--emsize", type=int, default=16, help="size of word embeddings")
    parser.add_argument("--nhid", type=int, default=32, help="number of hidden units per layer")
    parser.add_argument("--nlayers", type=int, default=2, help="number of layers")
    parser.add_argument("--lr", type=float, default=20, help="initial learning rate")
    parser.add_argument("--clip", type=float, default=0.25, help="gradient clipping")
    parser.add_argument("--epochs", type=int, default=1, help="upper epoch limit")
    parser.add_argument("--batch-size", type=int, default=4, metavar="N")
    parser.add_argument("--bptt", type=int, default=5, help="sequence length")
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--tied", action="store_true", help="tie the word embedding and softmax weights")
    parser.add_argument("--seed", type=int, default=1111)
    return parser.parse_args()


def repackage_hidden(h):
    """Detach hidden states from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    inputs = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return inputs, target


def train_epoch(lm, train_data, criterion, args):
    lm.train()
    total_loss = 0.0
    hidden = lm.init_hidden(args.batch_size)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        inputs, targets = get_batch(train_data, i, args.bptt)
        hidden = repackage_hidden(hidden)
        lm.zero_grad()
        output, hidden = lm(inputs, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(lm.parameters(), args.clip)
        for p in lm.parameters():
            p.data.add_(p.grad, alpha=-args.lr)
        total_loss += loss.item()
    return total_loss / (batch + 1)


def evaluate(lm, data_source, criterion, args, eval_batch_size):
    lm.eval()
    total_loss = 0.0
    hidden = lm.init_hidden(eval_batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            inputs, targets = get_batch(data_source, i, args.bptt)
            output, hidden = lm(inputs, hidden)
            total_loss += len(inputs) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    corpus = data.Corpus()
    eval_batch_size = 2
    train_data = data.batchify(corpus.train, args.batch_size)
    val_data = data.batchify(corpus.valid, eval_batch_size)
    ntokens = len(corpus.dictionary)
    lm = model.RNNModel(ntokens, args.emsize, args.nhid, args.nlayers, args.dropout, args.tied)
    criterion = nn.NLLLoss()
    for epoch in range(1, args.epochs + 1):
        train_loss = train_epoch(lm, train_data, criterion, args)
        val_loss = evaluate(lm, val_data, criterion, args, eval_batch_size)
        print(f"epoch {epoch}: train loss {train_loss:.2f} valid ppl {math.exp(val_loss):.2f}")


if __name__ == "__main__":
    main()
