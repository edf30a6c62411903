"""Text from results files, encoded for where the scripts print it."""
import unicodedata


def md_cell(text, table=True):
    """Text as one Markdown table cell that is safe on a terminal: '|' and
    '\\' escaped, control and format characters (ESC, newlines, bidi
    overrides) written as \\xNN / \\uNNNN. table=False escapes only for the
    terminal (paths in error lines)."""
    out = []
    for ch in text:
        if table and ch in "|\\":
            out.append("\\" + ch)
        elif unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)
