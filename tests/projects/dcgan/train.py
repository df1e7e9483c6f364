"""Adversarial training loop: python train.py [--niter N] [--nz 100 --ngf 64 --ndf 64]."""
import argparse

import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

from nets import Discriminator, Generator, weights_init

REAL_LABEL, FAKE_LABEL = 1.0, 0.0


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=16, help="input batch size")
    parser.add_argument("--image-size", type=int, default=32, help="height / width of the images")
    parser.add_argument("--nc", type=int, default=3, help="number of image channels")
    parser.add_argument("--nz", type=int, default=16, help="size of the latent z vector")
    parser.add_argument("--ngf", type=int, default=8)
    parser.add_argument("--ndf", type=int, default=8)
    parser.add_argument("--niter", type=int, default=1, help="number of epochs to train for")
    parser.add_argument("--num-images", type=int, default=40, help="size of the (random) dataset")
    parser.add_argument("--lr", type=float, default=0.0002)
    parser.add_argument("--beta1", type=float, default=0.5, help="beta1 for adam")
    parser.add_argument("--manual-seed", type=int, default=999)
    return parser.parse_args()


def make_dataset(opt):
    # Stand-in for a folder of images, scaled to [-1, 1] like the Tanh output of the generator.
    images = torch.tanh(torch.randn(opt.num_images, opt.nc, opt.image_size, opt.image_size))
    return TensorDataset(images)


def main():
    opt = parse_args()
    torch.manual_seed(opt.manual_seed)
    dataloader = DataLoader(make_dataset(opt), batch_size=opt.batch_size, shuffle=True)

    netG = Generator(opt.nz, opt.ngf, opt.nc)
    netG.apply(weights_init)
    netD = Discriminator(opt.nc, opt.ndf)
    netD.apply(weights_init)

    criterion = nn.BCELoss()
    fixed_noise = torch.randn(opt.batch_size, opt.nz, 1, 1)
    optimizerD = optim.Adam(netD.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))

    for epoch in range(opt.niter):
        for i, (real,) in enumerate(dataloader):
            # (1) Update D: maximize log(D(x)) + log(1 - D(G(z)))
            netD.zero_grad()
            b_size = real.size(0)
            label = torch.full((b_size,), REAL_LABEL)
            output = netD(real)
            errD_real = criterion(output, label)
            errD_real.backward()
            noise = torch.randn(b_size, opt.nz, 1, 1)
            fake = netG(noise)
            label.fill_(FAKE_LABEL)
            output = netD(fake.detach())
            errD_fake = criterion(output, label)
            errD_fake.backward()
            optimizerD.step()

            # (2) Update G: maximize log(D(G(z)))
            netG.zero_grad()
            label.fill_(REAL_LABEL)
            output = netD(fake)
            errG = criterion(output, label)
            errG.backward()
            optimizerG.step()
            print(f"[{epoch}/{opt.niter}][{i}/{len(dataloader)}] "
                  f"loss_D {(errD_real + errD_fake).item():.4f} loss_G {errG.item():.4f}")

    with torch.no_grad():
        samples = netG(fixed_noise)
    print("samples", tuple(samples.shape))


if __name__ == "__main__":
    main()
