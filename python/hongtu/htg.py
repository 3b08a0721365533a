"""Reader of hongtu graph files (.htg) and of the container every hongtu file uses, with numpy only,
written from docs/FORMATS.md. Part of the `hongtu` Python module (python/hongtu, docs/USAGE.md);
bench/htg.py is a shim over this file.

    g = read_htg("reddit.htg")          # sections are memory-mapped, nothing is copied
    g.num_vertices, g.offsets, g.sources, g.features, g.labels, g.split
    g.feature_dtype                     # "fp32", "bf16" or "fp16" (ht-convert --feature-dtype)
    g.features_f32()                    # features as float32 (16-bit ones widened, exactly)

Validation: everything of the container that docs/FORMATS.md lists (magic, byte-order mark,
version, header size, header checksum, recorded file size, section table: names, dtypes, shapes,
lengths, alignment, bounds, duplicates), the graph's required sections and their shapes, and with
check_data=True (the default) the graph checks: offsets start at 0, are non-decreasing and end at
E, sources < N, labels in [-1, C), split codes <= 3. Section checksums are NOT verified here
(pure-Python XXH64 over gigabytes would take minutes): `ht-convert --inspect FILE` does that.
Errors raise HtgError naming the file and the byte offset or section.

Run as a script it prints a JSON summary of a file (the keys of `summary()`).
"""

import json
import os
import struct
import sys

import numpy as np

HEADER_BYTES = 4096
MAGIC = b"HTGRAPH\0"
VERSION = 1
BOM = 0x01020304
MAX_SECTIONS = 32
ENTRY_BYTES = 96
TABLE_OFFSET = 192
CHECKSUM_OFFSET = 32
ALIGNMENT = 4096

# dtype code -> numpy little-endian dtype (docs/FORMATS.md, section entry). numpy has no bfloat16:
# bf16 sections (code 7) are mapped as their uint16 bit patterns.
DTYPES = {1: np.dtype("u1"), 2: np.dtype("<i4"), 3: np.dtype("<u4"), 4: np.dtype("<i8"), 5: np.dtype("<u8"),
          6: np.dtype("<f4"), 7: np.dtype("<u2"), 8: np.dtype("<f2")}
# The `features` section's dtype code -> the feature dtype's name.
FEATURE_DTYPES = {6: "fp32", 7: "bf16", 8: "fp16"}

FLAG_NAMES = ("symmetric", "has_self_loops", "sorted_neighbors", "no_duplicates", "features_normalized")

SPLIT_NONE, SPLIT_TRAIN, SPLIT_VAL, SPLIT_TEST = 0, 1, 2, 3


class HtgError(ValueError):
    """A file that is not a valid .htg; the message names the file and the position."""


# --- XXH64 (public xxHash algorithm), for the 4 KiB header only -------------------------------
_P1 = 0x9E3779B185EBCA87
_P2 = 0xC2B2AE3D27D4EB4F
_P3 = 0x165667B19E3779F9
_P4 = 0x85EBCA77C2B2AE63
_P5 = 0x27D4EB2F165667C5
_M = (1 << 64) - 1


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & _M


def _round(acc, lane):
    return (_rotl((acc + lane * _P2) & _M, 31) * _P1) & _M


def _merge(acc, val):
    return ((acc ^ _round(0, val)) * _P1 + _P4) & _M


def xxh64(data, seed=0):
    """XXH64 of bytes; pure Python, meant for small inputs such as the header."""
    n = len(data)
    p = 0
    if n >= 32:
        v = [(seed + _P1 + _P2) & _M, (seed + _P2) & _M, seed & _M, (seed - _P1) & _M]
        words = struct.unpack_from("<%dQ" % ((n // 32) * 4), data, 0)
        for i in range(0, len(words), 4):
            v = [_round(v[k], words[i + k]) for k in range(4)]
        p = (n // 32) * 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M
        for k in range(4):
            h = _merge(h, v[k])
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while p + 8 <= n:
        (w,) = struct.unpack_from("<Q", data, p)
        h = (_rotl(h ^ _round(0, w), 27) * _P1 + _P4) & _M
        p += 8
    if p + 4 <= n:
        (w,) = struct.unpack_from("<I", data, p)
        h = (_rotl(h ^ (w * _P1 & _M), 23) * _P2 + _P3) & _M
        p += 4
    while p < n:
        h = (_rotl(h ^ (data[p] * _P5 & _M), 11) * _P1) & _M
        p += 1
    h ^= h >> 33
    h = (h * _P2) & _M
    h ^= h >> 29
    h = (h * _P3) & _M
    h ^= h >> 32
    return h


# --- container ---------------------------------------------------------------------------------
class Section:
    def __init__(self, name, dtype, shape, offset, length, checksum, code=0):
        self.name, self.dtype, self.shape, self.code = name, dtype, shape, code
        self.offset, self.length, self.checksum = offset, length, checksum


def _fail(path, where, problem):
    raise HtgError("%s%s: %s" % (path, where, problem))


def read_container(path, magic=MAGIC, version=VERSION):
    """Validates the header and section table; returns (flags, meta[16], {name: Section}, file size)."""
    size = os.path.getsize(path)
    if size < HEADER_BYTES:
        _fail(path, "", "file is %d bytes, shorter than the %d-byte header (truncated or not a hongtu file)"
              % (size, HEADER_BYTES))
    with open(path, "rb") as f:
        header = f.read(HEADER_BYTES)
    if header[0:8] != magic:
        _fail(path, " (byte 0)", "bad magic %r, expected %r" % (header[0:8], magic))
    ver, bom, hsize, nsec, flags, checksum, recorded = struct.unpack_from("<IIIIQQQ", header, 8)
    if bom != BOM:
        _fail(path, " (byte 12)", "byte-order mark 0x%08x, expected 0x%08x (written on a big-endian machine?)"
              % (bom, BOM))
    if ver != version:
        _fail(path, " (byte 8)", "format version %d, this reader knows version %d" % (ver, version))
    if hsize != HEADER_BYTES:
        _fail(path, " (byte 16)", "header size %d, expected %d" % (hsize, HEADER_BYTES))
    zeroed = header[:CHECKSUM_OFFSET] + b"\0" * 8 + header[CHECKSUM_OFFSET + 8:]
    if xxh64(zeroed) != checksum:
        _fail(path, " (byte 32)", "header checksum mismatch (the header is corrupted)")
    if recorded != size:
        _fail(path, " (byte 40)", "header records %d bytes but the file has %d (truncated or appended to)"
              % (recorded, size))
    if nsec > MAX_SECTIONS:
        _fail(path, " (byte 20)", "%d sections, at most %d allowed" % (nsec, MAX_SECTIONS))
    meta = list(struct.unpack_from("<16Q", header, 64))
    sections = {}
    for i in range(nsec):
        at = TABLE_OFFSET + i * ENTRY_BYTES
        where = " (byte %d, section entry %d)" % (at, i)
        raw_name = header[at:at + 32]
        name = raw_name.split(b"\0", 1)[0]
        if not name or len(name) > 31 or raw_name[len(name):].strip(b"\0"):
            _fail(path, where, "bad section name %r" % raw_name)
        name = name.decode("ascii", "replace")
        code, ndim, rows, cols, offset, length, sec_sum = struct.unpack_from("<IIQQQQQ", header, at + 32)
        if code not in DTYPES:
            _fail(path, where, "section '%s' has unknown dtype code %d" % (name, code))
        if ndim not in (1, 2) or (ndim == 1 and cols != 1):
            _fail(path, where, "section '%s' has ndim %d, shape [%d, %d]" % (name, ndim, rows, cols))
        if rows * cols * DTYPES[code].itemsize != length:
            _fail(path, where, "section '%s': shape [%d, %d] x %d bytes != length %d"
                  % (name, rows, cols, DTYPES[code].itemsize, length))
        if offset % ALIGNMENT or offset < HEADER_BYTES:
            _fail(path, where, "section '%s' offset %d is not a multiple of %d after the header"
                  % (name, offset, ALIGNMENT))
        if offset + length > size:
            _fail(path, where, "section '%s' ends at byte %d, past the end of the file (%d bytes)"
                  % (name, offset + length, size))
        if name in sections:
            _fail(path, where, "duplicate section '%s'" % name)
        shape = (rows,) if ndim == 1 else (rows, cols)
        sections[name] = Section(name, DTYPES[code], shape, offset, length, sec_sum, code)
    return flags, meta, sections, size


def _map(path, sec):
    if sec.length == 0:
        return np.zeros(sec.shape, dtype=sec.dtype)
    return np.memmap(path, dtype=sec.dtype, mode="r", offset=sec.offset, shape=sec.shape)


# --- graph -------------------------------------------------------------------------------------
class HtgGraph:
    """A .htg graph: CSC of in-edges plus optional vertex data; arrays are read-only memmaps."""

    def __init__(self, path):
        self.path = path
        self.num_vertices = self.num_edges = self.id_bytes = self.feature_dim = self.num_classes = 0
        self.flags = {}
        self.offsets = self.sources = None
        self.edge_weights = self.features = self.labels = self.split = self.orig_ids = None
        self.feature_dtype = "fp32"  # of `features` as stored: fp32, bf16 (uint16 bit patterns) or fp16
        self.file_bytes = 0
        self.header_checksum = 0

    def destinations(self):
        """Destination of every in-edge (int64 [E]): vertex v repeated in-degree(v) times."""
        deg = np.diff(self.offsets)
        return np.repeat(np.arange(self.num_vertices, dtype=np.int64), deg)

    def features_f32(self):
        """The features as a float32 array (16-bit ones widened, exactly), or None without features."""
        if self.features is None:
            return None
        x = np.asarray(self.features)
        if self.feature_dtype == "bf16":
            return (x.astype(np.uint32) << 16).view(np.float32)
        return x.astype(np.float32) if self.feature_dtype == "fp16" else x

    def split_mask(self, code):
        if self.split is None:
            return None
        return np.asarray(self.split) == code

    def summary(self):
        s = {"file": self.path, "bytes": self.file_bytes, "header_checksum": "%016x" % self.header_checksum,
             "num_vertices": self.num_vertices, "num_edges": self.num_edges, "id_bytes": self.id_bytes,
             "feature_dim": self.feature_dim, "feature_dtype": self.feature_dtype, "num_classes": self.num_classes,
             "has_labels": self.labels is not None, "weighted": self.edge_weights is not None,
             "has_orig_ids": self.orig_ids is not None, "flags": self.flags}
        if self.labels is not None:
            lab = np.asarray(self.labels)
            s["class_counts"] = np.bincount(lab[lab >= 0], minlength=self.num_classes).tolist()
            s["unlabeled"] = int(np.count_nonzero(lab < 0))
        if self.split is not None:
            counts = np.bincount(np.asarray(self.split), minlength=4)
            s["split"] = {"none": int(counts[0]), "train": int(counts[1]), "val": int(counts[2]),
                          "test": int(counts[3])}
        else:
            s["split"] = None
        return s


def _expect(path, sections, name, dtype, shape, required):
    sec = sections.get(name)
    if sec is None:
        if required:
            _fail(path, "", "required section '%s' is missing" % name)
        return None
    if sec.dtype != dtype or sec.shape != shape:
        _fail(path, " (section '%s')" % name, "dtype %s shape %s, expected %s shape %s"
              % (sec.dtype.name, list(sec.shape), np.dtype(dtype).name, list(shape)))
    return sec


def _max_in_blocks(a, block=1 << 24):
    """max() of a large memmap without holding more than one block in memory at a time."""
    m = None
    for i in range(0, a.shape[0], block):
        b = a[i:i + block]
        if b.size:
            v = b.max()
            m = v if m is None or v > m else m
    return m


def read_htg(path, check_data=True):
    """Opens and validates a .htg file; the arrays are memory-mapped (nothing is read eagerly)."""
    flags, meta, sections, size = read_container(path)
    g = HtgGraph(path)
    g.file_bytes = size
    with open(path, "rb") as f:
        f.seek(CHECKSUM_OFFSET)
        (g.header_checksum,) = struct.unpack("<Q", f.read(8))
    n, e, id_bytes, feat, classes = meta[0:5]
    if id_bytes not in (4, 8):
        _fail(path, " (byte 80, meta[2])", "id width %d bytes, expected 4 or 8" % id_bytes)
    g.num_vertices, g.num_edges, g.id_bytes, g.feature_dim, g.num_classes = n, e, id_bytes, feat, classes
    g.flags = {name: bool(flags >> bit & 1) for bit, name in enumerate(FLAG_NAMES)}
    id_type = np.dtype("<u4") if id_bytes == 4 else np.dtype("<u8")
    g.offsets = _map(path, _expect(path, sections, "csc_offsets", np.dtype("<i8"), (n + 1,), True))
    g.sources = _map(path, _expect(path, sections, "csc_sources", id_type, (e,), True))
    feat_sec = sections.get("features")
    feat_code = feat_sec.code if feat_sec is not None and feat_sec.code in FEATURE_DTYPES else 6
    g.feature_dtype = FEATURE_DTYPES[feat_code]
    opt = {"edge_weights": (np.dtype("<f4"), (e,)), "features": (DTYPES[feat_code], (n, feat)),
           "labels": (np.dtype("<i4"), (n,)), "split": (np.dtype("u1"), (n,)), "orig_ids": (np.dtype("<i8"), (n,))}
    for name, (dtype, shape) in opt.items():
        sec = _expect(path, sections, name, dtype, shape, False)
        setattr(g, name, None if sec is None else _map(path, sec))
    if check_data:
        _check_graph(g)
    return g


def _check_graph(g):
    path, n, e = g.path, g.num_vertices, g.num_edges
    off = np.asarray(g.offsets)
    if off[0] != 0 or off[n] != e:
        _fail(path, " (section 'csc_offsets')", "offsets run from %d to %d, expected 0 to E = %d"
              % (off[0], off[n], e))
    bad = np.flatnonzero(np.diff(off) < 0)
    if bad.size:
        _fail(path, " (section 'csc_offsets')", "offsets decrease at vertex %d" % bad[0])
    if e and _max_in_blocks(g.sources) >= n:
        _fail(path, " (section 'csc_sources')", "a source id is >= N = %d" % n)
    if g.labels is not None and n:
        lab = np.asarray(g.labels)
        if lab.min() < -1 or lab.max() >= g.num_classes:
            _fail(path, " (section 'labels')", "labels span [%d, %d], expected [-1, %d)"
                  % (lab.min(), lab.max(), g.num_classes))
    if g.split is not None and n and np.asarray(g.split).max() > SPLIT_TEST:
        _fail(path, " (section 'split')", "split code %d, expected 0..3" % np.asarray(g.split).max())


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print("usage: htg.py FILE.htg   (validates the file, prints a JSON summary; section checksums are "
              "not verified: use ht-convert --inspect for that)")
        return 0 if len(argv) == 2 else 2
    try:
        g = read_htg(argv[1])
    except (HtgError, OSError) as err:
        print("htg.py: error: %s" % err, file=sys.stderr)
        return 1
    print(json.dumps(g.summary()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
