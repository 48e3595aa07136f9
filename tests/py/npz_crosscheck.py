#!/usr/bin/env python3
"""Cross-checks io/npy.ts and io/npz.ts against numpy and scipy.

  npz_crosscheck.py gen OUTDIR
      Writes .npy / .npz / sparse .npz files of every supported dtype, byte
      order, memory order and rank with numpy and scipy, plus OUTDIR/expected.json
      describing every value. tests/npy_test.ts and tests/npz_test.ts read them.

  npz_crosscheck.py verify DIR
      Loads the files that the TypeScript side wrote into DIR (described by
      DIR/manifest.json) with numpy.load / scipy.sparse.load_npz, checks dtype,
      shape, order and every value, checks that each .npy is byte-identical to
      what numpy.save writes for the loaded array, and prints a JSON verdict:
      {"checked": N, "failures": [...]}.

Values are encoded in JSON as: floats -> number, or "nan" / "inf" / "-inf" /
"-0.0"; integers -> decimal strings; booleans -> true/false; bytes/str -> str.
"""
import io
import json
import math
import os
import sys
import warnings
import zipfile

import numpy as np
import scipy.sparse as sp

DTYPES = ["f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "b1"]
SHAPES = [(), (5,), (3, 4), (2, 3, 4), (0,), (2, 0)]


def enc(x, kind):
    if kind == "f":
        x = float(x)
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        if x == 0 and math.copysign(1.0, x) < 0:
            return "-0.0"
        return x
    if kind in "iu":
        return str(int(x))
    if kind == "b":
        return bool(x)
    if kind == "S":
        return bytes(x).decode("latin1")
    if kind == "U":
        return str(x)
    raise ValueError(kind)


def encode_values(a):
    kind = a.dtype.kind
    return [enc(x, kind) for x in a.ravel(order="C").tolist()]


def make_values(dt, n):
    """n deterministic values of dtype dt, special values first."""
    d = np.dtype(dt)
    if d.kind == "f":
        fi = np.finfo(d)
        specials = [1.5, -2.25, float("nan"), float("inf"), float("-inf"), -0.0, 0.0,
                    float(fi.max), float(fi.tiny), -float(fi.max), float(fi.smallest_subnormal)]
        vals = specials + [(i * 0.5) - 7.0 for i in range(max(0, n - len(specials)))]
        return np.array(vals[:n], dtype=d)
    if d.kind in "iu":
        ii = np.iinfo(d)
        specials = [int(ii.min), int(ii.max), 0, 1] + ([-1] if d.kind == "i" else [2])
        span = int(ii.max) - int(ii.min) + 1
        vals = specials + [int(ii.min) + (i * 7919 + 13) % span for i in range(max(0, n - len(specials)))]
        return np.array(vals[:n], dtype=d)
    if d.kind == "b":
        return np.array([(i % 3) != 1 for i in range(n)], dtype=d)
    raise ValueError(dt)


def case_name(dt, order, shape, layout):
    o = {"<": "le", ">": "be", "|": "na"}[order]
    s = "x".join(str(x) for x in shape) if shape else "scalar"
    return f"{dt}_{o}_{s}_{layout}"


def describe(a, extra=None):
    fortran = bool(a.flags.f_contiguous and not a.flags.c_contiguous)
    d = {"descr": np.lib.format.dtype_to_descr(a.dtype), "shape": list(a.shape),
         "fortran_order": fortran, "values": encode_values(a)}
    if extra:
        d.update(extra)
    return d


def gen_arrays():
    """name -> array for every dtype x byte order x shape x layout."""
    out = {}
    for dt in DTYPES:
        d = np.dtype(dt)
        orders = ["|"] if d.itemsize == 1 else ["<", ">"]
        for order in orders:
            for shape in SHAPES:
                n = int(np.prod(shape)) if shape else 1
                base = make_values(dt, n).reshape(shape)
                a = base.astype(d.newbyteorder(order)) if order != "|" else base
                out[case_name(dt, order, shape, "C")] = a.copy(order="C")
                if len(shape) >= 2:
                    out[case_name(dt, order, shape, "F")] = np.asfortranarray(a)
    out["S3_na_scalar_C"] = np.array(b"csr")
    out["S5_na_3_C"] = np.array([b"ab", b"", b"hello"])
    out["U4_le_3_C"] = np.array(["ab", "", "h\u00e9ll"], dtype="<U4")
    out["U4_be_2x2_F"] = np.asfortranarray(np.array([["a", "bc"], ["def", "ghij"]], dtype=">U4"))
    return out


def sparse_cases():
    dense = np.zeros((5, 7), dtype=np.float64)
    for k, (i, j) in enumerate([(0, 0), (0, 6), (1, 3), (2, 2), (2, 5), (3, 1), (4, 0), (4, 4), (4, 6)]):
        dense[i, j] = (k + 1) * 1.25 * (-1) ** k
    cases = {
        "sp_csr_f4": sp.csr_matrix(dense.astype(np.float32)),
        "sp_csc_f8": sp.csc_matrix(dense),
        "sp_coo_f4": sp.coo_matrix(dense.astype(np.float32)),
        "sp_csr_array_f8": sp.csr_array(dense),
        "sp_csc_array_f4": sp.csc_array(dense.astype(np.float32)),
        "sp_coo_array_f8": sp.coo_array(dense),
        "sp_csr_empty_f4": sp.csr_matrix((3, 4), dtype=np.float32),
        "sp_csr_i8": sp.csr_matrix(dense.astype(np.int64)),
    }
    big = sp.csr_matrix(dense)
    big.indices = big.indices.astype(np.int64)
    big.indptr = big.indptr.astype(np.int64)
    assert big.indices.dtype == np.int64
    cases["sp_csr_int64idx_f8"] = big
    return cases


def gen(outdir):
    os.makedirs(outdir, exist_ok=True)
    expected = {"npy": {}, "versions": {}, "npz": {}, "sparse": {}, "zip64": {}}
    arrays = gen_arrays()
    for name, a in arrays.items():
        np.save(os.path.join(outdir, name + ".npy"), a)
        expected["npy"][name] = describe(a)
    # Format versions 1.0 / 2.0 / 3.0 (numpy picks 1.0 itself; force the others).
    for ver in [(1, 0), (2, 0), (3, 0)]:
        for src in ["f4_le_3x4_C", "i8_be_3x4_F", "U4_le_3_C"]:
            a = arrays[src]
            name = f"v{ver[0]}_{src}"
            with open(os.path.join(outdir, name + ".npy"), "wb") as f:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    np.lib.format.write_array(f, a, version=ver)
            expected["versions"][name] = describe(a, {"version": ver[0]})
    # A header so long that numpy itself must pick 2.0 (and one needing 3.0).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from numpy.lib import _format_impl as fmt
        long_header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }" + " " * 70000
        with open(os.path.join(outdir, "preamble_v2.bin"), "wb") as f:
            f.write(fmt._wrap_header_guess_version(long_header))
        utf8_header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x\u20ac': 0, }"
        with open(os.path.join(outdir, "preamble_v3.bin"), "wb") as f:
            f.write(fmt._wrap_header_guess_version(utf8_header))
    expected["preambles"] = {"preamble_v2.bin": long_header, "preamble_v3.bin": utf8_header}
    # Dense npz: positional and named, stored and compressed.
    pos = [arrays["f4_le_3x4_C"], arrays["i8_le_5_C"], arrays["b1_na_scalar_C"], arrays["f8_be_3x4_F"]]
    named = {"alpha": arrays["u2_be_2x3x4_F"], "beta": arrays["f2_le_5_C"], "gamma": arrays["S5_na_3_C"]}
    for comp, fn in [(False, np.savez), (True, np.savez_compressed)]:
        tag = "savez_compressed" if comp else "savez"
        fn(os.path.join(outdir, f"{tag}_pos.npz"), *pos)
        expected["npz"][f"{tag}_pos.npz"] = {
            "compressed": comp, "arrays": {f"arr_{i}": describe(a) for i, a in enumerate(pos)}}
        fn(os.path.join(outdir, f"{tag}_named.npz"), **named)
        expected["npz"][f"{tag}_named.npz"] = {
            "compressed": comp, "arrays": {k: describe(a) for k, a in named.items()}}
        fn(os.path.join(outdir, f"{tag}_all.npz"), **arrays)
        expected["npz"][f"{tag}_all.npz"] = {"compressed": comp, "arrays": {k: describe(a) for k, a in arrays.items()}}
    # Written to an unseekable stream: zipfile adds data descriptors (flag bit 3)
    # and leaves the local headers without sizes.
    class Unseekable:
        def __init__(self, f):
            self.f = f

        def write(self, b):
            return self.f.write(b)

        def flush(self):
            self.f.flush()

        def read(self, *_):  # numpy only checks that it exists
            raise OSError("write-only stream")

    with open(os.path.join(outdir, "savez_stream.npz"), "wb") as raw:
        np.savez_compressed(Unseekable(raw), *pos)
    expected["npz"]["savez_stream.npz"] = {
        "compressed": True, "arrays": {f"arr_{i}": describe(a) for i, a in enumerate(pos)}}
    # Sparse, compressed and not.
    for name, m in sparse_cases().items():
        for comp in [False, True]:
            fname = f"{name}_{'z' if comp else 's'}.npz"
            sp.save_npz(os.path.join(outdir, fname), m, compressed=comp)
            e = {"format": m.format, "shape": list(m.shape), "is_array": isinstance(m, sp.sparray),
                 "dtype": m.dtype.str, "nnz": int(m.nnz), "dense": encode_values(m.toarray()),
                 "data": encode_values(m.data)}
            if m.format == "coo":
                e["row"] = encode_values(m.row)
                e["col"] = encode_values(m.col)
                e["index_dtype"] = m.row.dtype.str
            else:
                e["indices"] = encode_values(m.indices)
                e["indptr"] = encode_values(m.indptr)
                e["index_dtype"] = m.indices.dtype.str
            expected["sparse"][fname] = e
    # More than 65535 entries: Python's zipfile must write a ZIP64 end record.
    buf = io.BytesIO()
    np.save(buf, np.arange(3, dtype="<i4"))
    blob = buf.getvalue()
    count = 65537
    with zipfile.ZipFile(os.path.join(outdir, "zip64_many.npz"), "w") as z:
        for i in range(count):
            z.writestr(f"a{i}.npy", blob)
    expected["zip64"]["zip64_many.npz"] = {"count": count, "values": ["0", "1", "2"]}
    with open(os.path.join(outdir, "expected.json"), "w") as f:
        json.dump(expected, f)
    print(json.dumps({"files": len(os.listdir(outdir))}))


# ---------------------------------------------------------------------------

def same_values(a, expected_values):
    got = encode_values(a)
    if len(got) != len(expected_values):
        return f"{len(got)} values, expected {len(expected_values)}"
    for i, (g, e) in enumerate(zip(got, expected_values)):
        if isinstance(g, float) and isinstance(e, int) and not isinstance(e, bool):
            e = float(e)  # JSON from JavaScript writes 2.0 as 2
        if g != e or type(g) is not type(e):
            return f"value {i}: got {g!r}, expected {e!r}"
    return None


def check_array(a, spec, where, failures):
    descr = np.lib.format.dtype_to_descr(a.dtype)
    if descr != spec["descr"]:
        failures.append(f"{where}: dtype {descr}, expected {spec['descr']}")
        return
    if list(a.shape) != spec["shape"]:
        failures.append(f"{where}: shape {list(a.shape)}, expected {spec['shape']}")
        return
    fortran = bool(a.flags.f_contiguous and not a.flags.c_contiguous)
    if "fortran_order" in spec and fortran != spec["fortran_order"]:
        failures.append(f"{where}: fortran_order {fortran}, expected {spec['fortran_order']}")
    problem = same_values(a, spec["values"])
    if problem:
        failures.append(f"{where}: {problem}")


def verify(d):
    with open(os.path.join(d, "manifest.json")) as f:
        manifest = json.load(f)
    failures = []
    checked = 0
    for item in manifest:
        path = os.path.join(d, item["file"])
        where = item["file"]
        try:
            if item["kind"] == "npy":
                a = np.load(path, allow_pickle=False)
                check_array(a, item, where, failures)
                buf = io.BytesIO()
                np.save(buf, a)
                with open(path, "rb") as f:
                    mine = f.read()
                if buf.getvalue() != mine:
                    failures.append(f"{where}: bytes differ from numpy.save of the same array")
            elif item["kind"] == "npz":
                with zipfile.ZipFile(path) as z:
                    if z.testzip() is not None:
                        failures.append(f"{where}: zipfile.testzip reports a bad CRC")
                    methods = {i.compress_type for i in z.infolist()}
                    want = zipfile.ZIP_DEFLATED if item["compressed"] else zipfile.ZIP_STORED
                    if methods and methods != {want}:
                        failures.append(f"{where}: compression methods {methods}, expected {want}")
                with np.load(path, allow_pickle=False) as z:
                    if sorted(z.files) != sorted(item["arrays"].keys()):
                        failures.append(f"{where}: keys {sorted(z.files)}, expected {sorted(item['arrays'])}")
                    for k, spec in item["arrays"].items():
                        if k in z.files:
                            check_array(z[k], spec, f"{where}:{k}", failures)
            elif item["kind"] == "sparse":
                m = sp.load_npz(path)
                if m.format != item["format"]:
                    failures.append(f"{where}: format {m.format}, expected {item['format']}")
                if list(m.shape) != item["shape"]:
                    failures.append(f"{where}: shape {list(m.shape)}, expected {item['shape']}")
                if m.dtype.str != item["dtype"]:
                    failures.append(f"{where}: dtype {m.dtype.str}, expected {item['dtype']}")
                if isinstance(m, sp.sparray) != item["is_array"]:
                    failures.append(f"{where}: sparray {isinstance(m, sp.sparray)}, expected {item['is_array']}")
                if m.nnz != item["nnz"]:
                    failures.append(f"{where}: nnz {m.nnz}, expected {item['nnz']}")
                # load_npz may downcast int64 indices: check the stored array.
                with np.load(path, allow_pickle=False) as z:
                    idx = z["row" if m.format == "coo" else "indices"]
                if idx.dtype.str != item["index_dtype"]:
                    failures.append(f"{where}: index dtype {idx.dtype.str}, expected {item['index_dtype']}")
                problem = same_values(m.toarray(), item["dense"])
                if problem:
                    failures.append(f"{where}: dense {problem}")
                with zipfile.ZipFile(path) as z:
                    names = [i.filename for i in z.infolist()]
                    if names != item["entries"]:
                        failures.append(f"{where}: entries {names}, expected {item['entries']}")
            else:
                failures.append(f"{where}: unknown kind {item['kind']}")
        except Exception as e:  # noqa: BLE001 - report, do not crash
            failures.append(f"{where}: {type(e).__name__}: {e}")
        checked += 1
    print(json.dumps({"checked": checked, "failures": failures}))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("gen", "verify"):
        sys.exit(__doc__)
    (gen if sys.argv[1] == "gen" else verify)(sys.argv[2])
