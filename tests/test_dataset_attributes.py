"""The torchvision datasets' own attributes as the core models them (``.classes``, ``.data``,
``.targets``), against torchvision where it can tell offline: the MNIST family's ``classes`` is a
class attribute; its splits' lengths are the ones torchvision documents and its resources list
(60000 and 10000 images of 28x28). CIFAR's class names come from the downloaded meta file, so
only their count as the core gives it is shown in the show-shapes output (not compared)."""
import pytest
import torchvision_compat

from shape_lint import _core

MNISTS = ["MNIST", "FashionMNIST", "KMNIST"]


def shapes_of(source):
    return dict(_core.show_shapes(source, "attrs.py"))


@pytest.mark.parametrize("name", MNISTS)
def test_the_mnist_family_classes_data_and_targets(name):
    torchvision = torchvision_compat.load()
    if torchvision is None:
        pytest.skip(torchvision_compat.REASON)
    classes = len(getattr(torchvision.datasets, name).classes)
    source = (
        "import torch\nimport torchvision\n"
        f"ds = torchvision.datasets.{name}('data', train=False)\n"
        "heads = torch.zeros(len(ds.classes))\n"
        "images = ds.data\n"
        "labels = ds.targets\n"
        f"train = torchvision.datasets.{name}('data', train=True).data\n"
    )
    shown = shapes_of(source)
    assert shown[4] == f"heads: [{classes}] float"
    assert shown[5].startswith("images: [10000, 28, 28]")
    assert shown[6] == "labels: [10000] long"
    assert shown[7].startswith("train: [60000, 28, 28]")


def test_a_split_not_known_has_no_data_and_imagefolder_classes_are_a_count_of_their_own():
    source = (
        "import json, sys\nimport torch\nimport torchvision\n"
        "flag = json.loads(sys.argv[1])\n"
        "ds = torchvision.datasets.MNIST('data', train=flag)\n"
        "images = ds.data\n"
        "folder = torchvision.datasets.ImageFolder('data/train')\n"
        "heads = torch.zeros(len(folder.classes))\n"
        "asked = torchvision.datasets.MNIST('data', train=len(sys.argv) > 2).data\n"
    )
    shown = shapes_of(source)
    assert 6 not in shown  # the split's length is not known: no tensor of it
    assert shown[8] == "heads: [n] float"  # as many classes as folders: a size of its own
    # a split that is a question each run answers (`len(sys.argv) > 2`): each side's data
    assert sorted(shown[9].split(" | ")) == ["asked: [10000, 28, 28] byte", "asked: [60000, 28, 28] byte"], shown[9]
