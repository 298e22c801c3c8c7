"""ISA hygiene of a built library: no code compiled for a wider ISA than x86-64's baseline (SSE2)
can be what a generic caller runs.

Only the per-ISA kernel files are compiled with ISA flags (src/CMakeLists.txt), and they keep their
code at internal linkage. The danger is an inline function with external linkage (a helper in a
shared header, a standard-library template) that an ISA-flagged file and a generic file both
emit: the linker keeps one copy for both, and if it keeps the AVX-512 one, the generic caller
faults on a CPU without AVX-512. So: every function of the library with external linkage (global
or weak) must hold baseline instructions only, unless its name carries the ISA it was compiled
for (xsimd's templates on an architecture type, e.g. `xsimd::batch<float, xsimd::avx512f>`), which
no generic file can instantiate.

    isa_hygiene_test.py LIBRARY.so           check a library (exit 1 naming every offender)
    isa_hygiene_test.py --self-test          build a library with such a leak and check that it is
                                             caught, and that its fix passes
"""
import os
import re
import subprocess
import sys
import tempfile

# SSSE3, SSE4.1 and SSE4.2 instructions (legacy encoding): what -msse4.2 adds to SSE2.
SSE4 = set("""
pabsb pabsw pabsd palignr phaddw phaddd phaddsw phsubw phsubd phsubsw pmaddubsw pmulhrsw pshufb
psignb psignw psignd blendpd blendps blendvpd blendvps dppd dpps extractps insertps movntdqa
mpsadbw packusdw pblendvb pblendw pcmpeqq pextrb pextrd pextrq phminposuw pinsrb pinsrd pinsrq
pmaxsb pmaxsd pmaxud pmaxuw pminsb pminsd pminud pminuw pmovsxbw pmovsxbd pmovsxbq pmovsxwd
pmovsxwq pmovsxdq pmovzxbw pmovzxbd pmovzxbq pmovzxwd pmovzxwq pmovzxdq pmuldq pmulld ptest
roundpd roundps roundsd roundss pcmpestri pcmpestrm pcmpistri pcmpistrm pcmpgtq crc32
""".split())
# AMX's tile instructions (-mamx-tile, -mamx-bf16, -mamx-int8).
AMX = set("""
ldtilecfg sttilecfg tilerelease tilezero tileloadd tileloaddt1 tilestored tdpbf16ps tdpbssd tdpbsud
tdpbusd tdpbuud
""".split())
# Which name tags allow each class: a function named for its ISA was compiled for it.
ALLOWED = {
    "amx": ("amx",),
    "avx512": ("avx512",),
    "avx": ("avx", "fma3", "fma4"),
    "sse4": ("sse4", "ssse3", "avx", "fma3"),
}
WIDEST_FIRST = ("amx", "avx512", "avx", "sse4")


def instruction_class(mnemonic, operands):
    """The widest ISA class an instruction needs beyond SSE2, or None."""
    if mnemonic in AMX:
        return "amx"
    if re.search(r"%zmm|%k[0-7]\b|%[xy]mm(1[6-9]|2\d|3[01])\b|\{1to\d+\}", operands):
        return "avx512"
    if mnemonic.startswith("v") and mnemonic not in ("verr", "verw") or "%ymm" in operands:
        return "avx"
    if mnemonic in SSE4:
        return "sse4"
    return None


def functions(library):
    """{mangled name: (binding letter, set of ISA classes used)} for every function."""
    binding = {}
    for line in subprocess.run(["nm", "--defined-only", library], check=True, capture_output=True,
                               text=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwWi":
            binding[parts[2]] = parts[1]
    used = {}
    current = None
    disassembly = subprocess.run(["objdump", "-d", "--no-show-raw-insn", library], check=True,
                                 capture_output=True, text=True).stdout
    for line in disassembly.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            current = m.group(1)
            used.setdefault(current, set())
            continue
        m = re.match(r"^\s+[0-9a-f]+:\s+(?:\{\w+\}\s+)?([a-z][a-z0-9.]*)\s*(.*)$", line)
        if m and current is not None:
            cls = instruction_class(m.group(1), m.group(2))
            if cls:
                used[current].add(cls)
    return {name: (binding.get(name, "?"), classes) for name, classes in used.items()}


def demangle(names):
    if not names:
        return {}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                         check=True).stdout.splitlines()
    return dict(zip(names, out))


def offenders(library):
    """[(demangled name, class)] of external functions holding wider code their name does not
    carry."""
    found = functions(library)
    external = {n: c for n, (b, c) in found.items() if b in "TWwi" and c}
    readable = demangle(sorted(external))
    bad = []
    for name, classes in external.items():
        widest = next(c for c in WIDEST_FIRST if c in classes)
        if not any(tag in readable[name] for tag in ALLOWED[widest]):
            bad.append((readable[name], widest))
    return sorted(bad), len(found), len(external)


def check(library):
    bad, total, wide = offenders(library)
    if bad:
        print(f"{library}: {len(bad)} function(s) with external linkage hold code of a wider ISA "
              "than the baseline; a generic caller may run them (keep ISA code at internal linkage "
              "or in a namespace named for its ISA):")
        for name, cls in bad:
            print(f"  {cls}: {name}")
        return 1
    print(f"{library}: {total} functions, {wide} with external linkage and wider code, each "
          "named for its ISA; none leaks")
    return 0


SELF_TEST_HEADER = """
#pragma once
{open}
inline float dot(const float* a, const float* b, int n) {{
  float s = 0;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}}
{close}
"""
SELF_TEST_WIDE = '#include "helper.hpp"\nfloat wide(const float* a, int n) { return dot(a, a, n); }\n'
SELF_TEST_GENERIC = ('#include "helper.hpp"\n'
                     'float generic(const float* a, int n) { return dot(a, a, n) + 1; }\n')


def self_test():
    """A library where an AVX-512 file and a generic one share an inline helper of external
    linkage, the AVX-512 object linked first (so its copy is kept): the check must fail on it,
    and pass once the helper has internal linkage."""
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case, (open_, close), want in (("leak", ("", ""), 1),
                                           ("internal", ("namespace {", "}"), 0)):
            with open(os.path.join(tmp, "helper.hpp"), "w") as f:
                f.write(SELF_TEST_HEADER.format(open=open_, close=close))
            for name, text in (("wide.cpp", SELF_TEST_WIDE), ("generic.cpp", SELF_TEST_GENERIC)):
                with open(os.path.join(tmp, name), "w") as f:
                    f.write(text)
            lib = os.path.join(tmp, f"lib{case}.so")
            compile_ = ["g++", "-O2", "-fPIC", "-fno-inline", "-c"]
            subprocess.run(compile_ + ["-mavx512f", "-ftree-vectorize", "wide.cpp", "-o", "wide.o"],
                           cwd=tmp, check=True)
            subprocess.run(compile_ + ["generic.cpp", "-o", "generic.o"], cwd=tmp, check=True)
            subprocess.run(["g++", "-shared", "wide.o", "generic.o", "-o", lib], cwd=tmp, check=True)
            got = check(lib)
            if got != want:
                print(f"self-test {case}: the check returned {got}, expected {want}")
                status = 1
    print("self-test:", "passed" if status == 0 else "FAILED")
    return status


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(check(sys.argv[1]))
