#!/bin/sh
# Checks that a C program linked with libedgelock needs no C++ runtime: no
# undefined symbol of libstdc++ or of the C++ ABI (operator new/delete,
# exceptions, RTTI, std::), and no libstdc++ among its needed libraries.
# Usage: check_no_cxx_runtime.sh BINARY
set -u
binary=${1:?usage: check_no_cxx_runtime.sh BINARY}
if [ ! -f "$binary" ]; then
    echo "no such file: $binary"
    exit 1
fi
status=0
# The C++ ABI and libstdc++: operator new/delete, exceptions, RTTI, std::.
pattern='_Zn[wa]|_Zd[la]|__cxa_|__gxx_|_ZTV|_ZTI|_ZSt|__dynamic_cast|_Unwind_Resume'
# The C library's own __cxa_ functions (static destructors, at exit) are no
# C++ runtime.
libc='[[:space:]]__cxa_(atexit|finalize|thread_atexit_impl)(@|$)'
dynamic=$(readelf -d "$binary" 2>/dev/null | grep -c NEEDED || true)
if [ "$dynamic" -gt 0 ]; then
    symbols=$(nm -u "$binary") || { echo "nm -u $binary failed"; exit 1; }
    what="undefined"
else
    # A static binary has nothing undefined: look for the runtime's code in
    # it instead (the library's own vtables and the C library's unwinder
    # aside).
    symbols=$(nm "$binary" | grep -v -E 'N8edgelock|[[:space:]]_Unwind_') ||
        { echo "nm $binary failed"; exit 1; }
    what="static binary:"
fi
cxx=$(printf '%s\n' "$symbols" | grep -E "$pattern" | grep -v -E "$libc" || true)
if [ -n "$cxx" ]; then
    echo "$what C++ runtime symbols in $binary:"
    printf '%s\n' "$cxx" | sed 's/^/  /'
    status=1
else
    echo "$what no C++ runtime symbol among $(printf '%s\n' "$symbols" | grep -c .) symbols"
fi
needed=$(readelf -d "$binary" 2>/dev/null | grep NEEDED || true)
if printf '%s\n' "$needed" | grep -q 'libstdc++'; then
    echo "$binary needs libstdc++:"
    printf '%s\n' "$needed" | sed 's/^/  /'
    status=1
else
    echo "needed libraries: $(printf '%s\n' "$needed" | sed -n 's/.*\[\(.*\)\].*/\1/p' | tr '\n' ' ')"
fi
exit $status
