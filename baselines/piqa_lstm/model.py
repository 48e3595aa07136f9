"""The PIQA "LSTM" baseline shape (Seo et al. 2018), small, in PyTorch.

Context encoder: [GloVe 100d (frozen, f16-rounded) ; casing embedding 8d]
-> BiLSTM(128) -> H; start = BiLSTM_s(H) (2x64), end = BiLSTM_e(H) (2x64).
Question encoder: same input -> BiLSTM(128) -> H; q_s = self-attentive
pooling of BiLSTM_qs(H) (2x64), q_e likewise.
Phrase (i, j) = [start_i ; end_j], question = [q_s ; q_e]; the score of a
phrase is their inner product = start_i . q_s + end_j . q_e.
"""
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

N_CASING = 6  # 0 pad, 1 lower/other word, 2 Capitalized, 3 ALLCAPS, 4 has digit, 5 punctuation
CASE_DIM = 8
HIDDEN = 128
BOUND = 64  # per direction of the start/end LSTMs: start and end are 2 x 64 = 128 each


class Embed(nn.Module):
    def __init__(self, table: torch.Tensor):
        super().__init__()
        self.register_buffer("table", table)  # V x 100, rows 0 pad and 1 unk are zero
        self.unk = nn.Parameter(torch.zeros(table.shape[1]))
        self.case = nn.Embedding(N_CASING, CASE_DIM, padding_idx=0)

    def full_table(self) -> torch.Tensor:
        return torch.cat([self.table[:1], self.unk[None], self.table[2:]], 0)

    def forward(self, ids, casing):
        return torch.cat([nn.functional.embedding(ids, self.full_table()), self.case(casing)], -1)


def run_lstm(lstm: nn.LSTM, x, lengths):
    packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
    y, _ = lstm(packed)
    y, _ = pad_packed_sequence(y, batch_first=True, total_length=x.shape[1])
    return y


class ContextModel(nn.Module):
    def __init__(self, table, dropout=0.2):
        super().__init__()
        self.embed = Embed(table)
        d_in = table.shape[1] + CASE_DIM
        self.lstm = nn.LSTM(d_in, HIDDEN, batch_first=True, bidirectional=True)
        self.lstm_s = nn.LSTM(2 * HIDDEN, BOUND, batch_first=True, bidirectional=True)
        self.lstm_e = nn.LSTM(2 * HIDDEN, BOUND, batch_first=True, bidirectional=True)
        self.drop = nn.Dropout(dropout)

    def forward(self, ids, casing, lengths):
        x = self.drop(self.embed(ids, casing))
        h = self.drop(run_lstm(self.lstm, x, lengths))
        return run_lstm(self.lstm_s, h, lengths), run_lstm(self.lstm_e, h, lengths)


class QuestionModel(nn.Module):
    def __init__(self, table, dropout=0.2):
        super().__init__()
        self.embed = Embed(table)
        d_in = table.shape[1] + CASE_DIM
        self.lstm = nn.LSTM(d_in, HIDDEN, batch_first=True, bidirectional=True)
        self.lstm_s = nn.LSTM(2 * HIDDEN, BOUND, batch_first=True, bidirectional=True)
        self.lstm_e = nn.LSTM(2 * HIDDEN, BOUND, batch_first=True, bidirectional=True)
        self.att_s = nn.Linear(2 * BOUND, 1)
        self.att_e = nn.Linear(2 * BOUND, 1)
        self.drop = nn.Dropout(dropout)

    @staticmethod
    def pool(att, y, mask):
        a = att(y).squeeze(-1) + (mask - 1.0) * 1e4
        w = torch.softmax(a, -1)
        return torch.einsum("bt,btd->bd", w, y)

    def forward(self, ids, casing, lengths, mask):
        x = self.drop(self.embed(ids, casing))
        h = self.drop(run_lstm(self.lstm, x, lengths))
        ys = run_lstm(self.lstm_s, h, lengths)
        ye = run_lstm(self.lstm_e, h, lengths)
        return torch.cat([self.pool(self.att_s, ys, mask), self.pool(self.att_e, ye, mask)], -1)
