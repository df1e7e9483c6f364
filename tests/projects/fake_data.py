"""Offline stand-ins for the torchvision datasets the projects load (not a test module).

``project_runner.py`` calls ``install()`` before a project's entry script runs, when the project
uses torchvision. It replaces the dataset classes on ``torchvision.datasets`` by fakes like
``FakeData``: PIL images of the real image size and mode (so the projects' transforms run on
what they would get) and random class indices, with nothing read, written or downloaded.

Lengths: a fake is much shorter than the real dataset, but it keeps the real length's
remainder modulo every batch size in ``BATCH_SIZES`` (the batch sizes the projects use with
these datasets), so the last batch of an epoch has the size it has on real data, and a bug
that only the last batch meets fails here too. ``ImageFolder`` reads no directory: it has
``IMAGEFOLDER_CLASSES`` classes and ``IMAGEFOLDER_LENGTH`` RGB images of ``IMAGEFOLDER_SIZE``.
"""
import math
import zlib

# Every batch size (train and test) that a project uses with a dataset below: keep it up to date.
BATCH_SIZES = (64, 128)

# name: (image size as (channels, height, width), classes, real train length, real test length)
IMAGE_DATASETS = {
    "MNIST": ((1, 28, 28), 10, 60000, 10000),
    "FashionMNIST": ((1, 28, 28), 10, 60000, 10000),
    "KMNIST": ((1, 28, 28), 10, 60000, 10000),
    "CIFAR10": ((3, 32, 32), 10, 50000, 10000),
    "CIFAR100": ((3, 32, 32), 100, 50000, 10000),
}

IMAGEFOLDER_CLASSES = ("ants", "bees")
IMAGEFOLDER_LENGTH = 20
IMAGEFOLDER_SIZE = (3, 72, 96)  # channels, height, width: not square, so Resize and CenterCrop both act


def fake_length(real_length, batch_sizes=BATCH_SIZES):
    """The shortest positive length with the same remainder as ``real_length`` modulo each batch size."""
    period = math.lcm(*batch_sizes)
    return real_length % period or period


class _FakeImages:
    """Random PIL images (of one size and mode) with random class indices, made up front.

    Made like ``torchvision.datasets.FakeData`` but all at once from a seeded generator
    (FakeData reseeds the global RNG per item, which is slow and disturbs the script's RNG).
    """

    def __init__(self, length, image_size, num_classes, transform, target_transform, seed):
        import torch

        channels, height, width = image_size
        g = torch.Generator().manual_seed(seed)
        pixels = torch.randint(0, 256, (length, height, width, channels), dtype=torch.uint8, generator=g)
        self._pixels = pixels.squeeze(-1).numpy() if channels == 1 else pixels.numpy()
        self.targets = torch.randint(0, num_classes, (length,), generator=g).tolist()
        self.transform, self.target_transform = transform, target_transform

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        from PIL import Image

        img, target = Image.fromarray(self._pixels[index]), self.targets[index]
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target


def _image_dataset(name, image_size, num_classes, train_length, test_length):
    import torch.utils.data

    class Fake(_FakeImages, torch.utils.data.Dataset):
        def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
            length = fake_length(train_length if train else test_length)
            super().__init__(length, image_size, num_classes, transform, target_transform,
                             seed=0 if train else 1)
            self.root, self.train = root, train
            self.classes = [str(i) for i in range(num_classes)]

    Fake.__name__ = Fake.__qualname__ = "Fake" + name
    return Fake


def _image_folder():
    import torch.utils.data

    class FakeImageFolder(_FakeImages, torch.utils.data.Dataset):
        def __init__(self, root, transform=None, target_transform=None, loader=None,
                     is_valid_file=None, allow_empty=False):
            super().__init__(IMAGEFOLDER_LENGTH, IMAGEFOLDER_SIZE, len(IMAGEFOLDER_CLASSES),
                             transform, target_transform, seed=zlib.crc32(str(root).encode()))
            self.root = root
            self.classes = list(IMAGEFOLDER_CLASSES)
            self.class_to_idx = {c: i for i, c in enumerate(self.classes)}
            self.samples = self.imgs = [(f"{root}/{self.classes[t]}/{i}.jpg", t)
                                        for i, t in enumerate(self.targets)]

    return FakeImageFolder


def install():
    """Replace the real dataset classes on ``torchvision.datasets`` (torchvision must be importable)."""
    import torchvision.datasets as datasets

    for name, spec in IMAGE_DATASETS.items():
        setattr(datasets, name, _image_dataset(name, *spec))
    datasets.ImageFolder = _image_folder()
