#!/usr/bin/env python3
"""An independent reading of an ncu CSV fixture, for tests/analysis/ncu_test.cc.

Written apart from src/nnperf/analysis/ncu.cc (Python's csv module, table look-ups, regular
expressions) and only as complete as the valid fixtures need. Prints {"convention": ...,
"records": {id: {field: number or null}}} for records' numeric fields, the roofline included
for the peaks given. Usage: reference.py FILE [PEAK_GFLOPS PEAK_GBPS]
"""
import csv
import io
import json
import math
import re
import sys

BYTES = {"byte": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12}
SECONDS = {"nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0,
           "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
HERTZ = {"hz": 1, "khz": 1e3, "mhz": 1e6, "ghz": 1e9, "cycle/second": 1, "cycle/msecond": 1e3,
         "cycle/usecond": 1e6, "cycle/nsecond": 1e9}
COUNT = {"": 1, "inst": 1, "cycle": 1}


def launches(path):
    lines = open(path, encoding="utf-8").read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID",'))
    body = [line for line in lines[start:] if line.strip() and not line.startswith("==")]
    rows = list(csv.reader(io.StringIO("\n".join(body))))
    header = rows[0]
    out = {}  # id -> {"name", "block", "grid", "m": {metric: (value, unit)}}
    col = {h: i for i, h in reversed(list(enumerate(header)))}
    if "Metric Name" in col:
        for r in rows[1:]:
            if not r[col["Metric Name"]]:
                continue
            get = lambda name: r[col[name]] if name in col and col[name] < len(r) else ""
            launch = out.setdefault(r[0], {"name": get("Kernel Name"), "block": get("Block Size"),
                                           "grid": get("Grid Size"), "m": {}})
            launch["m"].setdefault(r[col["Metric Name"]],
                                   (r[col["Metric Value"]], r[col["Metric Unit"]]))
    else:
        units = rows[1]
        for r in rows[2:]:
            out[r[0]] = {"name": r[col["Kernel Name"]],
                         "block": r[col["Block Size"]] if "Block Size" in col else "",
                         "grid": r[col["Grid Size"]] if "Grid Size" in col else "",
                         "m": {h: (r[i], units[i]) for i, h in enumerate(header) if "__" in h}}
    return out


def comma_decimal(all_values):
    # The German convention shows itself by a comma after the last point, a comma not followed by
    # exactly three digits, or two points.
    for v in all_values:
        if re.fullmatch(r"[0-9.]*\.[0-9]{3},[0-9]+", v) or re.fullmatch(r"[0-9]+,([0-9]{1,2}|[0-9]{4,})", v) \
                or v.count(".") > 1:
            return True
    return False


def number(text, de):
    text = text.strip()
    if text.lower() in ("", "n/a"):
        return math.nan
    if de:
        text = text.replace(".", "").replace(",", ".")
    else:
        text = text.replace(",", "")
    return float(text)


def main():
    path = sys.argv[1]
    peak_gflops = float(sys.argv[2]) if len(sys.argv) > 2 else math.nan
    peak_gbps = float(sys.argv[3]) if len(sys.argv) > 3 else math.nan
    data = launches(path)
    de = comma_decimal([v for l in data.values() for (v, _) in l["m"].values()])
    records = {}
    for lid, l in data.items():
        m = l["m"]

        def val(name, table):
            if name not in m:
                return None
            v, u = m[name]
            return number(v, de) * table[u.lower()]

        def first(names, table):
            for n in names:
                v = val(n, table)
                if v is not None:
                    return v
            return None

        flops = {}
        for p, label in (("f", "fp32"), ("d", "fp64"), ("h", "fp16")):
            c = {}
            for op in ("fma", "mul", "add"):
                c[op] = first([f"sm__sass_thread_inst_executed_op_{p}{op}_pred_on.sum",
                               f"smsp__sass_thread_inst_executed_op_{p}{op}_pred_on.sum"], COUNT)
            ok = all(x is not None and not math.isnan(x) for x in c.values())
            flops[label] = 2 * c["fma"] + c["mul"] + c["add"] if ok else math.nan
        present = [x for x in flops.values() if not math.isnan(x)]
        total = sum(present) if present else math.nan
        dram = val("dram__bytes.sum", BYTES)
        if dram is None:
            dram = val("dram__bytes_read.sum", BYTES) + val("dram__bytes_write.sum", BYTES)
        l2 = val("lts__t_bytes.sum", BYTES)
        l1 = val("l1tex__t_bytes.sum", BYTES)
        t = val("gpu__time_duration.sum", SECONDS)
        if t is None:
            t = val("sm__cycles_elapsed.avg", COUNT) / val("sm__cycles_elapsed.avg.per_second", HERTZ)
        tensor = first(["sm__inst_executed_pipe_tensor.sum", "smsp__inst_executed_pipe_tensor.sum"],
                       COUNT)
        div = lambda a, b: a / b if b is not None and b > 0 else math.nan
        ai = div(total, dram)
        gflops = div(total, t) / 1e9
        attainable = math.nan if math.isnan(ai) else min(peak_gflops, ai * peak_gbps)
        rec = {"flops_fp32": flops["fp32"], "flops_fp64": flops["fp64"], "flops_fp16": flops["fp16"],
               "flops": total, "tensor_inst": tensor, "dram_bytes": dram, "l2_bytes": l2,
               "l1_bytes": l1, "time_s": t, "ai_dram": ai, "ai_l2": div(total, l2),
               "ai_l1": div(total, l1), "gflops": gflops, "dram_gbs": div(dram, t) / 1e9,
               "attainable_gflops": attainable, "pct_of_attainable": div(100 * gflops, attainable)}
        records[lid] = {k: (None if v is None or math.isnan(v) else v) for k, v in rec.items()}
    print(json.dumps({"convention": "1.234.567,89" if de else "1,234,567.89", "records": records}))


if __name__ == "__main__":
    main()
