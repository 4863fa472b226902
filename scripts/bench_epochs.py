"""Epochs (issue 37, part 4): the gas of anchoring 1,000 heads in one epoch, and the time to verify a receipt.

Starts its own anvil on a free 127.0.0.1 port (always stopped), an operator brain with a
deployed registry, and ``--brains`` real brains (each registered, with its own lineage), then
anchors two epochs through the Python API (:func:`ledger.anchoring.epochs.anchor_epoch`):

- epoch 1: every real brain's heads plus **synthetic** heads (seq 1 of made-up agent ids, through
  the API's ``extra`` entries: the same compare-and-swap, no brain, no receipt) up to ``--heads``;
- epochs 2 … ``--epochs``: one more head of each real brain plus seq *n* of synthetic agents, ``--heads``
  again, so the chain checks a consistency proof from the epoch before.  Storage makes epochs
  differ: the first writes three new slots, later ones one (the root), and every fourth epoch one
  more (a new word of four packed sizes).

Figures (transaction level: 21,000 intrinsic and calldata included, from the receipts):
``epochs``: each epoch's heads, gas and gas per head, beside ``direct_commit_gas``, one
steady-state single-root ``commit`` of a real brain on the same registry (the issue's figure,
36,448, predates ADR 29's cheaper event); ``verify_receipt_us``: the median over
``--repeat`` runs of :func:`ledger.protocol.epochproof.verify_offline` on a real brain's receipt
(the key certification's secp256k1 recovery, the checkpoint's Ed25519 signature, the inclusion
proof), in microseconds; the target is 1 ms.

Usage: .venv/bin/python scripts/bench_epochs.py [--heads 1000] [--brains 8] [--one-head] [--epochs 5] [--repeat 2000]
                                                [--out bench-out/epochs.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

from scratch import scratch_dir  # scripts/scratch.py: waits for the brains' packers

ISSUE_DIRECT_COMMIT_GAS = 36_448  # the direct commit's cost as issue 37 states it (before ADR 29's cheaper event)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--heads", type=int, default=1000, help="heads per epoch, real and synthetic")
    ap.add_argument("--brains", type=int, default=8, help="real brains among them")
    ap.add_argument(
        "--one-head",
        action="store_true",
        help="each real brain holds only its first snapshot (with --brains 1000 --heads 1000: 1,000 real brains)",
    )
    ap.add_argument("--epochs", type=int, default=5, help="epochs anchored (every fourth opens a new sizes word)")
    ap.add_argument("--repeat", type=int, default=2000, help="offline verifications timed (median)")
    ap.add_argument("--out", default="bench-out/epochs.json")
    args = ap.parse_args()
    from ledger.anchoring.commits import commit_pending, deploy, register
    from ledger.anchoring.epochs import anchor_epoch
    from ledger.brain import Brain
    from ledger.chain import anvil
    from ledger.chain.config import ChainConfig
    from ledger.chain.keys import DEV_KEY_NAME
    from ledger.chain.receipts import read_notes, read_receipts
    from ledger.protocol import epochproof, tlog
    from ledger.protocol.refs import EPOCH_NOTES_REF

    started = time.perf_counter()
    with scratch_dir(prefix="bench-epochs-") as d:
        tmp = Path(d)
        os.environ["LEDGER_KEYS"] = str(tmp / "keys")  # this run's own signing keys
        node = anvil.start(tmp / "anvil", persist=False, lifetime=900)
        try:
            operator = Brain.init(tmp / "operator")
            operator.update_config(chain={"rpc": node.url})
            deploy(operator, key=DEV_KEY_NAME)
            cfg = ChainConfig.of(operator)
            brains = []
            for i in range(args.brains):
                b = Brain.init(tmp / f"brain{i}")
                b.update_config(
                    chain={
                        "rpc": cfg.rpc,
                        "chain_id": cfg.chain_id,
                        "registry": cfg.registry,
                        "deploy_block": cfg.deploy_block,
                    }
                )
                register(b, shares=1, key=DEV_KEY_NAME)
                if not args.one_head:
                    b.create("s", "The s skill", f"brain {i}\n")
                brains.append(b)
            real = sum(len(list(b.store.lineage())) for b in brains)
            synthetic = args.heads - real  # epoch 1; later epochs: one real head a brain, the rest synthetic
            if synthetic < 0:
                raise SystemExit(f"{args.brains} brains already hold {real} heads, above --heads {args.heads}")

            def agent(i: int) -> int:
                return int.from_bytes(hashlib.sha256(b"synthetic agent %d" % i).digest(), "big")

            def root(agent: int, seq: int) -> bytes:
                return hashlib.sha256(b"root %d %d" % (agent, seq)).digest()

            zero = b"\x00" * 32
            seqs: dict[int, int] = {}  # each synthetic agent's last seq

            def synthetic_heads(count: int) -> list[bytes]:
                """The next head of each of the first ``count`` synthetic agents (seq 1 for a new one)."""
                out = []
                for a in (agent(i) for i in range(count)):
                    n = seqs.get(a, 0) + 1
                    out.append(tlog.entry(a, n, root(a, n - 1) if n > 1 else zero, root(a, n)))
                    seqs[a] = n
                return out

            results = [anchor_epoch(operator, brains, key=DEV_KEY_NAME, extra=synthetic_heads(synthetic))]
            for n in range(2, args.epochs + 1):  # each real brain one head more, the rest synthetic
                for i, b in enumerate(brains):
                    b.create(f"t{n}", "A later skill", f"brain {i}, epoch {n}\n")
                extra = synthetic_heads(args.heads - len(brains))
                results.append(anchor_epoch(operator, brains, key=DEV_KEY_NAME, extra=extra))
            # the direct commit beside it, on the same registry: a brain's steady-state single-root commit
            direct = brains[0]
            commit_pending(direct, key=DEV_KEY_NAME)
            direct.create("direct", "A directly committed skill", "direct\n")
            commit_pending(direct, key=DEV_KEY_NAME)
            direct_gas = max(read_receipts(direct.store).values(), key=lambda r: r["seq"])["gas_used"]
            receipt = json.loads(next(iter(read_notes(brains[0].store, EPOCH_NOTES_REF).values())))
            for _ in range(50):
                epochproof.verify_offline(receipt)
            times = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                epochproof.verify_offline(receipt)
                times.append(time.perf_counter() - t)
            for b in brains:
                b.close()
            operator.close()
        finally:
            anvil.stop(tmp / "anvil")
    verify_us = statistics.median(times) * 1e6
    first = results[0]
    result = {
        "heads_per_epoch": args.heads,
        "real_brains": args.brains,
        "real_heads_epoch1": first.heads - synthetic,
        "synthetic_heads_epoch1": synthetic,
        "epochs": [
            {"epoch": r.epoch, "heads": r.heads, "gas": r.gas_used, "gas_per_head": round(r.gas_used / r.heads, 2)}
            for r in results
        ],
        "max_gas_per_head": max(round(r.gas_used / r.heads, 2) for r in results),
        "direct_commit_gas": direct_gas,
        "direct_commit_gas_in_issue_37": ISSUE_DIRECT_COMMIT_GAS,
        "verify_receipt_us": round(verify_us, 1),
        "verify_receipt_p95_us": round(sorted(times)[int(0.95 * len(times))] * 1e6, 1),
        "repeat": args.repeat,
        "elapsed_s": round(time.perf_counter() - started, 1),
    }
    per = ", ".join(f"{r.gas_used:,} ({r.gas_used / r.heads:.1f}/head)" for r in results)
    print(
        f"  {args.heads} heads an epoch ({synthetic} synthetic in epoch 1): gas {per}; direct commit "
        f"{direct_gas:,} (the issue says {ISSUE_DIRECT_COMMIT_GAS:,}); receipt verified offline in "
        f"{verify_us:.0f} us (median of {args.repeat})",
        file=sys.stderr,
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
