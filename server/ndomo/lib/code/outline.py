"""Symbol outline of one file: tree-sitter for Python/JS/TS/TSX/Go/Rust, regexes otherwise."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ndomo.lib.code.languages import language_for, parse, unavailable_reason
from ndomo.lib.code.models import Outline, Symbol, SymbolKind
from ndomo.lib.code.textoutline import text_outline

_CONST_NAME = re.compile(r"^_*[A-Z][A-Z0-9_]*$")
_SKIP = frozenset(
    {
        "string",
        "comment",
        "template_string",
        "regex",
        "string_literal",
        "raw_string_literal",
        "interpreted_string_literal",
        "line_comment",
        "block_comment",
    }
)
_FUNC_EXPR = frozenset(
    {
        "arrow_function",
        "function_expression",
        "function",
        "generator_function",
        "func_literal",
        "closure_expression",
        "lambda",
    }
)


@dataclass(frozen=True)
class _Ctx:
    qual: str | None  # dotted name of the enclosing symbol
    scope: str  # module | class | function | interface | impl


_STOP = _Ctx(None, "stop")


@dataclass
class _Collector:
    symbols: list[Symbol] = field(default_factory=list)
    def_points: set[tuple[int, int]] = field(default_factory=set)  # (row, col) of names
    stack: list = field(default_factory=list)

    def add(self, kind: SymbolKind, name_node, node, ctx: _Ctx) -> str | None:
        if name_node is None:
            return None
        name = name_node.text.decode("utf-8", errors="replace")
        self.symbols.append(
            Symbol(
                name=name,
                kind=kind,
                line=node.start_point.row + 1,
                end_line=node.end_point.row + 1,
                parent=ctx.qual,
            )
        )
        self.def_points.add((name_node.start_point.row, name_node.start_point.column))
        return f"{ctx.qual}.{name}" if ctx.qual else name

    def push(self, node, ctx: _Ctx) -> None:
        if node is not None:
            self.stack.append((node, ctx))


Visitor = Callable[[object, _Ctx, _Collector], "_Ctx | None"]


def _name(node):
    return node.child_by_field_name("name")


def _first_of_type(node, types: tuple[str, ...]):
    """First descendant (pre-order) of one of ``types``; for receiver/impl type names."""
    todo = [node]
    while todo:
        cur = todo.pop()
        if cur.type in types:
            return cur
        todo.extend(reversed(cur.named_children))
    return None


def _python(node, ctx, out):
    t = node.type
    if t == "class_definition":
        return _Ctx(out.add("class", _name(node), node, ctx), "class")
    if t == "function_definition":
        kind = "method" if ctx.scope == "class" else "function"
        return _Ctx(out.add(kind, _name(node), node, ctx), "function")
    if t == "expression_statement":
        if ctx.scope in ("module", "class"):
            for child in node.named_children:
                left = child.child_by_field_name("left") if child.type == "assignment" else None
                if left is not None and left.type == "identifier":
                    text = left.text.decode("utf-8", errors="replace")
                    kind = "const" if _CONST_NAME.match(text) else "variable"
                    out.add(kind, left, node, ctx)
        return None
    if t == "lambda":
        return _Ctx(ctx.qual, "function")
    return None


def _js(node, ctx, out):
    t = node.type
    if t in ("class_declaration", "abstract_class_declaration", "class"):
        if _name(node) is None:
            return None
        return _Ctx(out.add("class", _name(node), node, ctx), "class")
    if t in ("function_declaration", "generator_function_declaration", "function_signature"):
        kind = "method" if ctx.scope == "class" else "function"
        return _Ctx(out.add(kind, _name(node), node, ctx), "function")
    if t == "method_definition":
        return _Ctx(out.add("method", _name(node), node, ctx), "function")
    if t in ("method_signature", "abstract_method_signature"):
        out.add("method", _name(node), node, ctx)
        return _STOP
    if t == "interface_declaration":
        return _Ctx(out.add("interface", _name(node), node, ctx), "interface")
    if t == "type_alias_declaration":
        out.add("type", _name(node), node, ctx)
        return _STOP
    if t == "enum_declaration":
        out.add("enum", _name(node), node, ctx)
        return _STOP
    if t in ("internal_module", "module"):
        name = _name(node)
        if name is not None and name.type != "string":
            return _Ctx(out.add("module", name, node, ctx), "module")
        return None
    if t in ("public_field_definition", "field_definition"):
        name = _name(node) or node.child_by_field_name("property")
        value = node.child_by_field_name("value")
        if value is not None and value.type in _FUNC_EXPR:
            out.push(value, _Ctx(out.add("method", name, node, ctx), "function"))
        else:
            out.push(value, _Ctx(ctx.qual, "function"))
        return _STOP
    if t in ("lexical_declaration", "variable_declaration"):
        is_const = node.child(0) is not None and node.child(0).type == "const"
        for decl in node.named_children:
            if decl.type != "variable_declarator":
                continue
            name, value = _name(decl), decl.child_by_field_name("value")
            if name is None or name.type != "identifier":
                out.push(value, ctx)
                continue
            if value is not None and value.type in _FUNC_EXPR:
                out.push(value, _Ctx(out.add("function", name, decl, ctx), "function"))
            elif value is not None and value.type == "class":
                out.push(
                    value.child_by_field_name("body"),
                    _Ctx(out.add("class", name, decl, ctx), "class"),
                )
            else:
                if ctx.scope == "module":
                    out.add("const" if is_const else "variable", name, decl, ctx)
                out.push(value, ctx)
        return _STOP
    if t in _FUNC_EXPR:
        return _Ctx(ctx.qual, "function")
    return None


def _go(node, ctx, out):
    t = node.type
    if t == "function_declaration":
        return _Ctx(out.add("function", _name(node), node, ctx), "function")
    if t == "method_declaration":
        recv = node.child_by_field_name("receiver")
        rtype = _first_of_type(recv, ("type_identifier",)) if recv is not None else None
        owner = rtype.text.decode("utf-8", errors="replace") if rtype is not None else None
        return _Ctx(out.add("method", _name(node), node, _Ctx(owner, "class")), "function")
    if t in ("type_spec", "type_alias"):
        typ = node.child_by_field_name("type")
        kind = {"struct_type": "struct", "interface_type": "interface"}.get(
            typ.type if typ is not None else "", "type"
        )
        qual = out.add(kind, _name(node), node, ctx)
        if kind == "interface":
            out.push(typ, _Ctx(qual, "interface"))
        return _STOP
    if t in ("method_elem", "method_spec"):
        out.add("method", _name(node), node, ctx)
        return _STOP
    if t in ("const_spec", "var_spec"):
        if ctx.scope == "module":
            for name in node.children_by_field_name("name"):
                out.add("const" if t == "const_spec" else "variable", name, node, ctx)
        out.push(node.child_by_field_name("value"), ctx)
        return _STOP
    if t == "func_literal":
        return _Ctx(ctx.qual, "function")
    return None


def _rust(node, ctx, out):
    t = node.type
    if t in ("function_item", "function_signature_item"):
        kind = "method" if ctx.scope in ("impl", "interface") else "function"
        qual = out.add(kind, _name(node), node, ctx)
        return _Ctx(qual, "function") if t == "function_item" else _STOP
    if t in ("struct_item", "union_item"):
        out.add("struct", _name(node), node, ctx)
        return _STOP
    if t == "enum_item":
        out.add("enum", _name(node), node, ctx)
        return _STOP
    if t == "trait_item":
        return _Ctx(out.add("interface", _name(node), node, ctx), "interface")
    if t == "impl_item":
        typ = node.child_by_field_name("type")
        tid = None
        if typ is not None:
            tid = (
                typ if typ.type == "type_identifier" else _first_of_type(typ, ("type_identifier",))
            )
        owner = tid.text.decode("utf-8", errors="replace") if tid is not None else None
        if owner and ctx.qual and ctx.scope == "module":
            owner = f"{ctx.qual}.{owner}"
        return _Ctx(owner, "impl")
    if t == "mod_item":
        return _Ctx(out.add("module", _name(node), node, ctx), "module")
    if t in ("const_item", "static_item"):
        out.add("const" if t == "const_item" else "variable", _name(node), node, ctx)
        return _STOP
    if t == "type_item":
        out.add("type", _name(node), node, ctx)
        return _STOP
    if t == "closure_expression":
        return _Ctx(ctx.qual, "function")
    return None


_VISITORS: dict[str, Visitor] = {
    "python": _python,
    "javascript": _js,
    "typescript": _js,
    "tsx": _js,
    "go": _go,
    "rust": _rust,
}


def extract(lang: str, tree) -> tuple[list[Symbol], set[tuple[int, int]]]:
    """Symbols of a parsed tree plus the (row, col) of each definition's name."""
    visit = _VISITORS[lang]
    out = _Collector()
    out.stack.append((tree.root_node, _Ctx(None, "module")))
    while out.stack:  # explicit stack: deep expression trees must not hit the recursion limit
        node, ctx = out.stack.pop()
        if node.type in _SKIP:
            continue
        new = visit(node, ctx, out)
        if new is _STOP:
            continue
        child_ctx = ctx if new is None else new
        out.stack.extend((c, child_ctx) for c in reversed(node.named_children))
    out.symbols.sort(key=lambda s: (s.line, s.end_line * -1))
    return out.symbols, out.def_points


def outline_with_defs(path: str, text: str) -> tuple[Outline, set[tuple[int, int]] | None]:
    """Outline plus definition name positions (None when the text engine was used)."""
    lang = language_for(path)
    note = None
    if lang is not None:
        tree = parse(lang, text.encode("utf-8", errors="replace"))
        if tree is not None:
            symbols, defs = extract(lang, tree)
            return Outline(path=path, engine="tree-sitter", symbols=symbols), defs
        note = f"text fallback: {unavailable_reason(lang)}"
    return Outline(path=path, engine="text", symbols=text_outline(path, text), note=note), None


def outline(path: str, text: str) -> Outline:
    """Outline of ``text`` as the file at ``path`` (the extension picks the language)."""
    return outline_with_defs(path, text)[0]
