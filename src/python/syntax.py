"""What debug-mcp needs of `ast` to compile a program's module with its own calls in (before
3.12: probes, traced calls), on `_ast`, its C half: importing `ast` costs a program's start
~10 ms on 3.11 (contextlib, enum, collections: measured), `_ast` ~1 ms."""

from _ast import (AST, Add, Attribute, AugAssign, Call, Constant, Load, Name, PyCF_ONLY_AST, Store,
                  Subscript)

try:
    from _ast import Index  # a subscript's key, before 3.9
except ImportError:
    Index = None

_PLACE = ("lineno", "col_offset", "end_lineno", "end_col_offset")


def parse(source, path):
    """The module's tree (SyntaxError as compiling it raises)."""
    return compile(source, path, "exec", PyCF_ONLY_AST, True)


def children(node):
    """`ast.iter_child_nodes`."""
    for field in node._fields:
        value = getattr(node, field, None)
        if isinstance(value, AST):
            yield value
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, AST):
                    yield item


def walk(node):
    """`ast.walk`: the node and every node below it, breadth first."""
    todo = [node]
    for node in todo:  # the list grows as it is read
        todo.extend(children(node))
        yield node


def call(name, attribute=None, *args):
    """`name(*args)`, or `name.attribute(*args)`: a call to one of our builtins."""
    function = Name(name, Load()) if attribute is None else dotted(name, attribute)
    return Call(function, list(args), [])


def dotted(name, attribute):
    """`name.attribute`."""
    return Attribute(Name(name, Load()), attribute, Load())


def count(name, attribute, key):
    """`name.attribute[key] += 1`."""
    key = Constant(key)
    target = Subscript(dotted(name, attribute), Index(key) if Index else key, Store())
    return AugAssign(target, Add(), Constant(1))


def place(node, where):
    """Gives the nodes made for `node` (those without a place) the place of the node `where`:
    tracebacks and line numbers stay the source's."""
    for part in walk(node):
        if "lineno" in part._attributes and getattr(part, "lineno", None) is None:
            for attribute in _PLACE:
                setattr(part, attribute, getattr(where, attribute, None))
