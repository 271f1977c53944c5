"""debug-mcp's fixes to rustc's lldb formatters (lldb_providers.py), loaded after them.

Three faults of theirs with lldb 19, each seen to mislead or hang lldb-dap:
- A summary of memory that is not (yet) a value (a `String` local before its assignment, read
  at a function's entry) raises, and lldb prints the traceback on its stderr: the program's
  stderr, to the agent. A summary that cannot be read is empty here.
- A variable whose memory is not (yet) a valid value (a local before its assignment, the
  other variant of an enum read wrongly) gives a String, Vec or slice a length of billions:
  lldb-dap asks for every child and never answers. Children are capped here, as lldb's own
  `target.max-children-count` caps what it prints.
- A niche-encoded enum whose niche variant's discriminant is 2**63 or more (`Result<u64,
  String>`'s `Ok`: String's capacity is the niche) is named `$variant$0` by lldb 19, so the
  formatter, matching names to discriminants, shows the other variant (`Err("")`).
"""

import lldb_providers

CAP = 256


def _capped(num_children):
    # One argument, as the formatter's own (lldb passes a limit to a method that takes two).
    def capped(self):
        return min(num_children(self), CAP)

    return capped


def _quiet(summary):
    def quiet(valobj, _dict):
        try:
            return summary(valobj, _dict)
        except Exception:
            return ""

    return quiet


# lldb_lookup took the providers' names into its own namespace: both are wrapped.
import lldb_lookup as _lookup  # noqa: E402

for _module in (lldb_providers, _lookup):
    for _name in dir(_module):
        _function = getattr(_module, _name)
        if _name.endswith("SummaryProvider") and callable(_function) and not isinstance(_function, type):
            setattr(_module, _name, _quiet(_function))

for _name in dir(lldb_providers):
    _class = getattr(lldb_providers, _name)
    if isinstance(_class, type) and _name.endswith("SyntheticProvider") and hasattr(_class, "num_children"):
        _class.num_children = _capped(_class.num_children)

_Enum = getattr(lldb_providers, "ClangEncodedEnumProvider", None)
if _Enum is not None:
    _current = _Enum._getCurrentVariantIndex

    def _variant_index(self, all_variants):
        found = _current(self, all_variants)
        chosen = all_variants.GetChildAtIndex(found)
        if chosen.GetChildMemberWithName(_Enum.DISCRIMINANT_MEMBER_NAME).IsValid():
            return found  # matched by name
        for i in range(all_variants.GetNumChildren()):
            variant = all_variants.GetChildAtIndex(i)
            discr = variant.GetChildMemberWithName(_Enum.DISCRIMINANT_MEMBER_NAME)
            if discr.IsValid() and variant.GetName() == "$variant$0" and discr.GetValueAsUnsigned() >= 2**63:
                return i
        return found

    _Enum._getCurrentVariantIndex = _variant_index


# A reference to an enum (`left_val: &Result<…>` in a failed `assert_eq!`) is a pointer to
# lldb, whose children are the enum's raw `$variants$`: shown through the enum's own provider
# and summary here (`Ok(Partial)`), as the enum itself is.
import lldb
import lldb_lookup
import rust_types

_synthetic_lookup = lldb_lookup.synthetic_lookup


def _enum_behind(valobj):
    """The enum a pointer points at, or None."""
    kind = valobj.GetType()
    if not kind.IsPointerType() and not kind.IsReferenceType():
        return None
    pointee = kind.GetPointeeType()
    if pointee.GetTypeClass() != lldb.eTypeClassStruct:
        return None
    fields = pointee.fields
    if not fields or fields[0].name != rust_types.ENUM_LLDB_ENCODED_VARIANTS:
        return None
    value = valobj.Dereference()
    return value if value.IsValid() else None


def synthetic_lookup(valobj, _dict):
    enum = _enum_behind(valobj)
    if enum is not None:
        category = lldb.debugger.GetCategory("Rust")
        category.AddTypeSummary(
            lldb.SBTypeNameSpecifier(valobj.GetTypeName()),
            lldb.SBTypeSummary().CreateWithFunctionName("debug_mcp_rust_lldb.enum_summary"),
        )
        return lldb_providers.ClangEncodedEnumProvider(enum, _dict)
    return _synthetic_lookup(valobj, _dict)


def enum_summary(valobj, _dict):
    enum = _enum_behind(valobj.GetNonSyntheticValue())
    if enum is None:
        return ""
    return lldb_providers.ClangEncodedEnumSummaryProvider(enum, _dict)


lldb_lookup.synthetic_lookup = synthetic_lookup
