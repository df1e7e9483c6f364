"""Train the transformer text classifier on random padded token sequences."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from model import TransformerClassifier
from utils import count_parameters, padding_mask, set_seed

CONFIG = {
    "vocab_size": 100,
    "d_model": 32,
    "nhead": 4,
    "d_hid": 64,
    "nlayers": 2,
    "dropout": 0.1,
    "num_classes": 3,
    "seq_len": 24,
    "max_len": 64,
    "batch_size": 8,
    "num_samples": 36,
    "epochs": 1,
    "lr": 5e-4,
}


def make_dataset(cfg):
    n, seq_len = cfg["num_samples"], cfg["seq_len"]
    lengths = torch.randint(4, seq_len + 1, (n,))
    tokens = torch.randint(1, cfg["vocab_size"], (n, seq_len))
    tokens = tokens.masked_fill(padding_mask(lengths, seq_len), 0)  # id 0 is padding
    labels = torch.randint(0, cfg["num_classes"], (n,))
    return TensorDataset(tokens, lengths, labels)


def run_epoch(model, loader, criterion, optimizer=None):
    training = optimizer is not None
    model.train(training)
    total, correct, seen = 0.0, 0, 0
    for tokens, lengths, labels in loader:
        pad_mask = padding_mask(lengths, tokens.size(1))
        with torch.set_grad_enabled(training):
            logits = model(tokens, pad_mask)
            loss = criterion(logits, labels)
        if training:
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        total += loss.item() * labels.size(0)
        correct += (logits.argmax(dim=-1) == labels).sum().item()
        seen += labels.size(0)
    return total / seen, correct / seen


def main(cfg=CONFIG):
    set_seed(0)
    train_loader = DataLoader(make_dataset(cfg), batch_size=cfg["batch_size"], shuffle=True)
    val_loader = DataLoader(make_dataset(cfg), batch_size=cfg["batch_size"])
    model = TransformerClassifier(cfg["vocab_size"], cfg["d_model"], cfg["nhead"], cfg["d_hid"],
                                  cfg["nlayers"], cfg["num_classes"], cfg["dropout"], cfg["max_len"])
    print(f"{count_parameters(model)} trainable parameters")
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
    for epoch in range(cfg["epochs"]):
        train_loss, train_acc = run_epoch(model, train_loader, criterion, optimizer)
        val_loss, val_acc = run_epoch(model, val_loader, criterion)
        print(f"epoch {epoch}: train {train_loss:.3f}/{train_acc:.2f} val {val_loss:.3f}/{val_acc:.2f}")


if __name__ == "__main__":
    main()
