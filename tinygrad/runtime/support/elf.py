"""A loader for x86-64 ELF relocatable objects (what a compiler emits for one .c/.ll file): its allocated sections are laid out in one mmap,
relocated, and made executable. Symbols the object doesn't define (libm's fmodf, memset ...) are looked up in the process and reached
through 16-byte jump stubs in the same mapping, so every PC-relative reference stays within 2 GiB."""
from __future__ import annotations
import ctypes, ctypes.util, functools, mmap, struct
from tinygrad.helpers import round_up

PROT_READ, PROT_WRITE, PROT_EXEC = 1, 2, 4
SHF_ALLOC, SHT_NOBITS, SHT_SYMTAB, SHT_RELA = 2, 8, 2, 4
# R_X86_64_*: 64, PC32, PLT32, 32, 32S, PC64, and the GOT-relative ones (GOTPCREL, GOTPCRELX, REX_GOTPCRELX) that point at a stub's address slot
R_64, R_PC32, R_PLT32, R_32, R_32S, R_PC64, R_GOT = 1, 2, 4, 10, 11, 24, (9, 41, 42)

class ElfError(ValueError): pass

@functools.cache
def _libc() -> ctypes.CDLL:
  libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
  libc.mmap.restype, libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
  libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
  libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
  return libc

@functools.cache
def _process_libs() -> list[ctypes.CDLL]:
  # the interpreter (libc, and libm on most builds), libm and libgcc (half conversions) in case the interpreter doesn't carry them
  return [ctypes.CDLL(None)] + [ctypes.CDLL(n) for n in (ctypes.util.find_library("m"), "libgcc_s.so.1") if n is not None and _loadable(n)]
def _loadable(name:str) -> bool:
  try: ctypes.CDLL(name)
  except OSError: return False
  return True

@functools.cache
def external_symbol(name:str) -> int:
  for lib in _process_libs():
    try: return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value or 0
    except AttributeError: pass
  raise ElfError(f"the object needs {name!r}, which no library of this process defines")

def _unpack(fmt:str, data:bytes, off:int, what:str) -> tuple:
  if off < 0 or off + struct.calcsize(fmt) > len(data): raise ElfError(f"malformed ELF: {what} at {off} is past the end ({len(data)} bytes)")
  return struct.unpack_from(fmt, data, off)

class ElfImage:
  """The object's code and data, loaded and executable; symbols[name] is each defined symbol's address."""
  def __init__(self, obj:bytes):
    try: self._load(obj)
    except (struct.error, IndexError, OverflowError, UnicodeDecodeError) as e: raise ElfError(f"malformed ELF: {e}") from e
  def _load(self, obj:bytes) -> None:
    if obj[:4] != b"\x7fELF" or len(obj) < 64: raise ElfError("not an ELF file")
    ident, etype, machine, _, _, _, shoff, _, _, _, _, shentsize, shnum, shstrndx = _unpack("<16sHHIQQQIHHHHHH", obj, 0, "header")
    if ident[4] != 2 or ident[5] != 1 or etype != 1 or machine != 62:
      raise ElfError(f"expected a little-endian 64-bit x86-64 relocatable object, got class {ident[4]} data {ident[5]} type {etype} "
                     f"machine {machine}")
    secs = [_unpack("<IIQQQQIIQQ", obj, shoff + i*shentsize, f"section header {i}") for i in range(shnum)]
    for i, (_, typ, _, _, off, size, *_r) in enumerate(secs):
      if typ != SHT_NOBITS and off + size > len(obj): raise ElfError(f"malformed ELF: section {i} ends past the end of the file")
    # place every allocated section, each at its alignment
    self.base_of: dict[int, int] = {}
    end = 0
    for i, (_, typ, flags, _, _, size, _, _, align, _) in enumerate(secs):
      if flags & SHF_ALLOC: self.base_of[i], end = (o := round_up(end, max(align, 1))), o + size
    syms: list[tuple] = []
    names = b""
    for sec in secs:
      if sec[1] == SHT_SYMTAB:
        syms = [_unpack("<IBBHQQ", obj, sec[4] + j*24, "symbol") for j in range(sec[5] // 24)]
        if sec[6] >= len(secs): raise ElfError("malformed ELF: symbol table without a string table")
        names = obj[secs[sec[6]][4]:secs[sec[6]][4]+secs[sec[6]][5]]
    def name_of(off:int) -> str: return names[off:names.find(b"\0", off) % (len(names)+1)].decode(errors="replace") if 0 <= off < len(names) else ""
    externals = sorted({name_of(s[0]) for s in syms if s[3] == 0 and s[0] != 0})
    stubs_at = round_up(end, 16)
    self.size = round_up(stubs_at + 16*len(externals) + 1, mmap.PAGESIZE)
    libc = _libc()
    self.addr = libc.mmap(None, self.size, PROT_READ | PROT_WRITE, 0x22, -1, 0)   # MAP_PRIVATE | MAP_ANONYMOUS
    if self.addr in (None, ctypes.c_void_p(-1).value):
      raise MemoryError(f"mmap of {self.size} bytes for a kernel failed (errno {ctypes.get_errno()})")
    mem = (ctypes.c_char * self.size).from_address(self.addr)
    for i, base in self.base_of.items():
      if secs[i][1] != SHT_NOBITS: mem[base:base+secs[i][5]] = obj[secs[i][4]:secs[i][4]+secs[i][5]]
    # each external: `jmp [rip+0]` then its address, which doubles as the symbol's GOT slot
    stub: dict[str, int] = {}
    for j, nm in enumerate(externals):
      stub[nm] = self.addr + stubs_at + 16*j
      mem[stubs_at+16*j:stubs_at+16*j+14] = b"\xff\x25\0\0\0\0" + struct.pack("<Q", external_symbol(nm))
    def sym_addr(k:int) -> int:
      if k >= len(syms): raise ElfError(f"malformed ELF: relocation names symbol {k} of {len(syms)}")
      nm, _, _, shndx, value, _ = syms[k]
      if shndx == 0: return stub[name_of(nm)]
      if shndx == 0xfff1: return value   # SHN_ABS
      if shndx not in self.base_of: raise ElfError(f"symbol {name_of(nm)!r} is in section {shndx}, which isn't loaded")
      return self.addr + self.base_of[shndx] + value
    self.symbols = {name_of(s[0]): self.addr + self.base_of[s[3]] + s[4] for s in syms if s[0] and s[3] in self.base_of}
    for sec in secs:
      if sec[1] != SHT_RELA or sec[7] not in self.base_of: continue
      target, tsize = self.base_of[sec[7]], secs[sec[7]][5]
      for j in range(sec[5] // 24):
        off, info, addend = _unpack("<QQq", obj, sec[4] + j*24, "relocation")
        typ, k = info & 0xffffffff, info >> 32
        if off + (8 if typ in (R_64, R_PC64) else 4) > tsize: raise ElfError(f"malformed ELF: relocation at {off} is outside its section")
        p = self.addr + target + off
        if typ in R_GOT:
          if k >= len(syms) or syms[k][3] != 0: raise ElfError("GOT relocation of a symbol the object doesn't import")
          s, pcrel = stub[name_of(syms[k][0])] + 6, True
        else: s, pcrel = sym_addr(k), typ in (R_PC32, R_PLT32, R_PC64)
        v = s + addend - (p if pcrel else 0)
        if typ in (R_64, R_PC64): struct.pack_into("<q" if v < 0 else "<Q", mem, target + off, v)
        elif typ in (R_PC32, R_PLT32, R_32S, *R_GOT) and -2**31 <= v < 2**31: struct.pack_into("<i", mem, target + off, v)
        elif typ == R_32 and 0 <= v < 2**32: struct.pack_into("<I", mem, target + off, v)
        else: raise ElfError(f"relocation type {typ} at {off} is not supported or out of range ({v:#x})")
    if libc.mprotect(self.addr, self.size, PROT_READ | PROT_EXEC) != 0: raise OSError(ctypes.get_errno(), "mprotect of a loaded kernel failed")
  def __del__(self) -> None:
    # at interpreter exit the module's globals may be gone already; the process's mappings go with it then
    if getattr(self, "addr", None) and _libc is not None: _libc().munmap(self.addr, self.size)
