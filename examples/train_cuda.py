"""An image classifier trainer, written the way a lot of research code is: for one CUDA box."""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

os.environ["CUDA_VISIBLE_DEVICES"] = "0"
torch.set_default_tensor_type("torch.cuda.FloatTensor")


class SmallNet(nn.Module):
    def __init__(self, classes: int = 3) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.head = nn.Linear(4 * 8 * 8, classes)

    def forward(self, x):
        keep = torch.ones(x.shape[0], 1, 8, 8).cuda()
        x = F.relu(self.conv(x * keep))
        return self.head(x.flatten(1))


def train(args):
    torch.cuda.set_device(0)
    images = torch.randn(64, 1, 8, 8)
    labels = torch.randint(0, 3, (64,))
    loader = DataLoader(TensorDataset(images, labels), batch_size=16, shuffle=True)
    model = SmallNet().cuda()
    if args.gpus > 1:
        model = nn.DataParallel(model)
    criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 0.5]))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.cuda.amp.GradScaler()
    for epoch in range(args.epochs):
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            with torch.cuda.amp.autocast():
                loss = criterion(model(x), y)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        print(epoch, loss.detach().numpy())
    torch.save(model.state_dict(), args.checkpoint)
    state = torch.load(args.checkpoint)
    scores = torch.cuda.FloatTensor(3).fill_(0)
    return model, state, scores.to("cuda:0")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--gpus", type=int, default=1)
    parser.add_argument("--checkpoint", default="model.pt")
    train(parser.parse_args())
