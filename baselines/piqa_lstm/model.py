"""The PIQA "LSTM" baseline shape (Seo et al. 2018), small, in PyTorch.

Context encoder: [GloVe 100d (frozen, f16-rounded) ; casing embedding 8d]
-> BiLSTM(128) -> H; start = BiLSTM_s(H) (2x64), end = BiLSTM_e(H) (2x64).
Question encoder: same input -> BiLSTM(128) -> H; q_s = self-attentive
pooling of BiLSTM_qs(H) (2x64), q_e likewise.
Phrase (i, j) = [start_i ; end_j], question = [q_s ; q_e]; the score of a
phrase is their inner product = start_i . q_s + end_j . q_e.

LSTM+SA (`heads=2`, PIQA's `--num_heads 2`): each boundary vector (start,
end, and the question's q_s, q_e before pooling) is [y ; SelfAtt(y)], y the
boundary LSTM's output: PIQA's `ContextBoundary` with `identity=True` and one
self-attention head (`SelfSeqAtt`). The head's keys are a BiLSTM(32) of y;
as in PIQA's code, the queries come from the same LSTM (its `query_lstm` is
never used), so the scores are K K^T (padding keys masked) and the value is
y itself: a = softmax_j(k_i . k_j), SelfAtt(y)_i = sum_j a_ij y_j. Widths
double: start and end 256 each, the phrase 512, the question 512.
"""
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

N_CASING = 6  # 0 pad, 1 lower/other word, 2 Capitalized, 3 ALLCAPS, 4 has digit, 5 punctuation
CASE_DIM = 8
HIDDEN = 128
BOUND = 64  # per direction of the start/end LSTMs: start and end are 2 x 64 = 128 each
ATT_HIDDEN = 32  # per direction of a self-attention head's key LSTM


class Embed(nn.Module):
    def __init__(self, table: torch.Tensor, n_casing=N_CASING):
        super().__init__()
        self.register_buffer("table", table)  # V x 100, rows 0 pad and 1 unk are zero
        self.unk = nn.Parameter(torch.zeros(table.shape[1]))
        self.case = nn.Embedding(n_casing, CASE_DIM, padding_idx=0)

    def full_table(self) -> torch.Tensor:
        return torch.cat([self.table[:1], self.unk[None], self.table[2:]], 0)

    def forward(self, ids, casing):
        return torch.cat([nn.functional.embedding(ids, self.full_table()), self.case(casing)], -1)


def run_lstm(lstm: nn.LSTM, x, lengths):
    packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
    y, _ = lstm(packed)
    y, _ = pad_packed_sequence(y, batch_first=True, total_length=x.shape[1])
    return y


class SelfAtt(nn.Module):
    """PIQA's SelfSeqAtt: keys (and queries) from one BiLSTM of y; the value is y."""

    def __init__(self, d, dropout=0.2):
        super().__init__()
        self.key_lstm = nn.LSTM(d, ATT_HIDDEN, batch_first=True, bidirectional=True)
        self.drop = nn.Dropout(dropout)

    def forward(self, y, lengths, mask):
        k = run_lstm(self.key_lstm, self.drop(y), lengths)
        a = k @ k.transpose(1, 2) + ((mask - 1.0) * 1e4)[:, None, :]
        return torch.softmax(a, -1) @ y


def boundary(y, att, lengths, mask):
    """[y ; SelfAtt(y)] with a head, y without."""
    return y if att is None else torch.cat([y, att(y, lengths, mask)], -1)


def length_mask(lengths, t):
    return (torch.arange(t)[None, :] < lengths[:, None]).float()


class ContextModel(nn.Module):
    def __init__(self, table, dropout=0.2, heads=1, n_casing=N_CASING):
        super().__init__()
        self.embed = Embed(table, n_casing)
        d_in = table.shape[1] + CASE_DIM
        self.lstm = nn.LSTM(d_in, HIDDEN, batch_first=True, bidirectional=True)
        self.lstm_s = nn.LSTM(2 * HIDDEN, BOUND, batch_first=True, bidirectional=True)
        self.lstm_e = nn.LSTM(2 * HIDDEN, BOUND, batch_first=True, bidirectional=True)
        self.heads = heads
        self.sa_s = SelfAtt(2 * BOUND, dropout) if heads == 2 else None
        self.sa_e = SelfAtt(2 * BOUND, dropout) if heads == 2 else None
        self.drop = nn.Dropout(dropout)

    def forward(self, ids, casing, lengths):
        x = self.drop(self.embed(ids, casing))
        h = self.drop(run_lstm(self.lstm, x, lengths))
        mask = length_mask(lengths, ids.shape[1])
        s = boundary(run_lstm(self.lstm_s, h, lengths), self.sa_s, lengths, mask)
        e = boundary(run_lstm(self.lstm_e, h, lengths), self.sa_e, lengths, mask)
        return s, e


class QuestionModel(nn.Module):
    def __init__(self, table, dropout=0.2, heads=1, n_casing=N_CASING):
        super().__init__()
        self.embed = Embed(table, n_casing)
        d_in = table.shape[1] + CASE_DIM
        self.lstm = nn.LSTM(d_in, HIDDEN, batch_first=True, bidirectional=True)
        self.lstm_s = nn.LSTM(2 * HIDDEN, BOUND, batch_first=True, bidirectional=True)
        self.lstm_e = nn.LSTM(2 * HIDDEN, BOUND, batch_first=True, bidirectional=True)
        self.heads = heads
        width = 2 * BOUND * heads
        self.sa_s = SelfAtt(2 * BOUND, dropout) if heads == 2 else None
        self.sa_e = SelfAtt(2 * BOUND, dropout) if heads == 2 else None
        self.att_s = nn.Linear(width, 1)
        self.att_e = nn.Linear(width, 1)
        self.drop = nn.Dropout(dropout)

    @staticmethod
    def pool(att, y, mask):
        a = att(y).squeeze(-1) + (mask - 1.0) * 1e4
        w = torch.softmax(a, -1)
        return torch.einsum("bt,btd->bd", w, y)

    def forward(self, ids, casing, lengths, mask):
        x = self.drop(self.embed(ids, casing))
        h = self.drop(run_lstm(self.lstm, x, lengths))
        ys = boundary(run_lstm(self.lstm_s, h, lengths), self.sa_s, lengths, mask)
        ye = boundary(run_lstm(self.lstm_e, h, lengths), self.sa_e, lengths, mask)
        return torch.cat([self.pool(self.att_s, ys, mask), self.pool(self.att_e, ye, mask)], -1)
