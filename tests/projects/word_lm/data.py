"""A tiny corpus held in code: a dictionary of words and the token stream of each split."""
import torch

TRAIN_TEXT = [
    "the cat sat on the mat",
    "the dog sat on the log",
    "a bird flew over the house",
    "the children played in the garden until dark",
    "my neighbour grows tomatoes and beans",
    "it rained all day and the river rose",
    "she read the letter twice before answering",
    "we walked to the station in the snow",
]
VALID_TEXT = [
    "the cat flew over the garden",
    "it rained on the station",
]


class Dictionary:
    def __init__(self):
        self.word2idx = {}
        self.idx2word = []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


class Corpus:
    def __init__(self, train_lines=TRAIN_TEXT, valid_lines=VALID_TEXT):
        self.dictionary = Dictionary()
        self.train = self.tokenize(train_lines)
        self.valid = self.tokenize(valid_lines)

    def tokenize(self, lines):
        """One id per word, with an <eos> after every line, as a 1-D LongTensor."""
        ids = []
        for line in lines:
            for word in line.split() + ["<eos>"]:
                ids.append(self.dictionary.add_word(word))
        return torch.tensor(ids, dtype=torch.long)


def batchify(data, bsz):
    """Cut the stream into bsz columns: [nbatch, bsz], trimming what does not fit."""
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()
