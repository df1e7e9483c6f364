"""Fine-tune a ResNet-18 on an ImageFolder tree: DATA/train/<class>/*.jpg and DATA/val/<class>/*.jpg."""
import argparse
import copy
import os
import time

import torch
import torch.nn as nn
from torch.optim import lr_scheduler
from torchvision import datasets, transforms

from model import build_model, trainable_parameters

IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]


def parse_args():
    parser = argparse.ArgumentParser(description="fine-tune resnet18 on an image folder")
    parser.add_argument("--data-dir", default="data/hymenoptera")
    parser.add_argument("--resize", type=int, default=72, help="shorter side before cropping")
    parser.add_argument("--image-size", type=int, default=64, help="side of the centre crop")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=0.001)
    parser.add_argument("--hidden", type=int, default=128, help="width of the new head (0: one linear layer)")
    parser.add_argument("--feature-extract", action="store_true", help="train the new head only")
    return parser.parse_args()


def build_transform(args):
    return transforms.Compose([
        transforms.Resize(args.resize),
        transforms.CenterCrop(args.image_size),
        transforms.ToTensor(),
        transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD),
    ])


def train_model(model, dataloaders, criterion, optimizer, scheduler, num_epochs):
    since = time.time()
    best_wts, best_acc = copy.deepcopy(model.state_dict()), 0.0
    for epoch in range(num_epochs):
        for phase in ["train", "val"]:
            model.train(phase == "train")
            running_loss, running_corrects, seen = 0.0, 0, 0
            for inputs, labels in dataloaders[phase]:
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == "train"):
                    outputs = model(inputs)
                    _, preds = torch.max(outputs, 1)
                    loss = criterion(outputs, labels)
                    if phase == "train":
                        loss.backward()
                        optimizer.step()
                running_loss += loss.item() * inputs.size(0)
                running_corrects += torch.sum(preds == labels).item()
                seen += inputs.size(0)
            if phase == "train":
                scheduler.step()
            epoch_acc = running_corrects / seen
            print(f"epoch {epoch} {phase}: loss {running_loss / seen:.4f} acc {epoch_acc:.4f}")
            if phase == "val" and epoch_acc >= best_acc:
                best_acc, best_wts = epoch_acc, copy.deepcopy(model.state_dict())
    print(f"done in {time.time() - since:.1f}s, best val acc {best_acc:.4f}")
    model.load_state_dict(best_wts)
    return model


def main():
    args = parse_args()
    torch.manual_seed(0)
    transform = build_transform(args)
    image_datasets = {x: datasets.ImageFolder(os.path.join(args.data_dir, x), transform) for x in ["train", "val"]}
    dataloaders = {
        x: torch.utils.data.DataLoader(image_datasets[x], batch_size=args.batch_size, shuffle=(x == "train"))
        for x in ["train", "val"]
    }
    class_names = image_datasets["train"].classes
    model = build_model(len(class_names), hidden=args.hidden, feature_extract=args.feature_extract)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(trainable_parameters(model), lr=args.lr, momentum=0.9)
    scheduler = lr_scheduler.StepLR(optimizer, step_size=7, gamma=0.1)
    train_model(model, dataloaders, criterion, optimizer, scheduler, args.epochs)


if __name__ == "__main__":
    main()
