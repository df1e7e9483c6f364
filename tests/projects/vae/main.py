"""Train the VAE on MNIST-shaped data (random pixels in [0, 1]) and decode a few samples."""
import argparse

import torch
from torch import optim
from torch.utils.data import DataLoader, TensorDataset

from vae import VAE, loss_function

IMAGE_SHAPE = (1, 28, 28)


def get_args():
    parser = argparse.ArgumentParser(description="VAE MNIST example")
    parser.add_argument("--batch-size", type=int, default=32, metavar="N")
    parser.add_argument("--epochs", type=int, default=1, metavar="N")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--latent", type=int, default=16)
    parser.add_argument("--num-samples", type=int, default=80)
    parser.add_argument("--num-decoded", type=int, default=16, help="samples drawn after training")
    parser.add_argument("--seed", type=int, default=1, metavar="S")
    parser.add_argument("--log-interval", type=int, default=2)
    return parser.parse_args()


def train(model, loader, optimizer, epoch, args):
    model.train()
    train_loss = 0.0
    for batch_idx, (data,) in enumerate(loader):
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print(f"epoch {epoch} batch {batch_idx} loss {loss.item() / len(data):.4f}")
    return train_loss / len(loader.dataset)


def main():
    args = get_args()
    torch.manual_seed(args.seed)
    images = torch.rand(args.num_samples, *IMAGE_SHAPE)
    loader = DataLoader(TensorDataset(images), batch_size=args.batch_size, shuffle=True)
    input_dim = IMAGE_SHAPE[1] * IMAGE_SHAPE[2]
    model = VAE(input_dim=input_dim, hidden_dim=args.hidden, latent_dim=args.latent)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(1, args.epochs + 1):
        avg = train(model, loader, optimizer, epoch, args)
        print(f"epoch {epoch}: average loss {avg:.4f}")
        with torch.no_grad():
            sample = torch.randn(args.num_decoded, args.latent)
            sample = model.decode(sample).view(args.num_decoded, *IMAGE_SHAPE)
            print("decoded", tuple(sample.shape))


if __name__ == "__main__":
    main()
