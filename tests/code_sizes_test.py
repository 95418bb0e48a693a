"""The project's sources stay small enough to read: no source file over 400
lines, no function over 60 (from its signature line to its closing brace or
last line, both included). C++ and CUDA functions are found by their braces:
a `{` after a `)` that no control keyword, lambda or initializer opened, not
inside another function (a lambda counts in the function it is in); Python
functions (methods and nested defs too) with the ast module.

    python3 tests/code_sizes_test.py            the checks (ctest code_sizes_test)
    python3 tests/code_sizes_test.py --report   the longest files and functions"""

import ast
import os
import re
import sys
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
FOLDERS = ("common", "proto", "server", "client", "tests", "bench", "scripts", "deploy")
# Function lengths are measured in these; file lengths in these and .proto, .sh.
CODE = (".h", ".cc", ".cu", ".py")
SOURCES = CODE + (".proto", ".sh")
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60

# A block that a statement of these opens is not a function body.
_CONTROL = re.compile(r"^(if|for|while|switch|catch|else|do)\b")
_LAMBDA = re.compile(r"\]\s*\(")
_QUALIFIER = re.compile(r"\s*(\bconst|\boverride|\bfinal|\bnoexcept|\bmutable|->\s*[\w:<>,*&\s]+)$")


def sources():
    for folder in FOLDERS:
        for directory, _, names in os.walk(os.path.join(ROOT, folder)):
            for name in sorted(names):
                if name.endswith(SOURCES) and "__pycache__" not in directory:
                    yield os.path.join(directory, name)


def _code_only(text):
    """`text` with comments, preprocessor lines, string and character
    literals blanked out (newlines kept), so that braces in them do not
    count and a function starts at its signature."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|^[ \t]*#[^\n]*|R"([^(]*)\(.*?\)\1"'
                         r'|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S | re.M)
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _is_function_head(head):
    """Whether `head`, the statement before a `{`, is a function's signature."""
    head = head.strip()
    while (stripped := _QUALIFIER.sub("", head)) != head:
        head = stripped
    return head.endswith(")") and not _CONTROL.match(head) and not _LAMBDA.search(head)


def cpp_functions(text):
    """(name, first line, last line) of each function body in C++ `text`,
    not counting those inside another function (they count in it)."""
    code = _code_only(text)
    functions, stack, start = [], [], 0  # start: where the current statement began
    for at, char in enumerate(code):
        if char == "{":
            head = code[start:at]
            opened = None
            if _is_function_head(head) and all(block is None for block in stack):
                first = code.count("\n", 0, start + len(head) - len(head.lstrip())) + 1
                name = re.search(r"([\w:~]+)\s*\(", head)
                opened = (name.group(1) if name else "?", first)
            stack.append(opened)
            start = at + 1
        elif char == "}":
            opened = stack.pop() if stack else None
            if opened is not None:
                functions.append((opened[0], opened[1], code.count("\n", 0, at) + 1))
            start = at + 1
        elif char == ";" or (char == ":" and re.search(r"\b(public|private|protected)\s*$",
                                                        code[start:at])):
            start = at + 1
    return functions


def python_functions(text):
    tree = ast.parse(text)
    return [(node.name, node.lineno, node.end_lineno) for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def functions(path):
    if not path.endswith(CODE):
        return []
    with open(path) as f:
        text = f.read()
    return python_functions(text) if path.endswith(".py") else cpp_functions(text)


def report(count=10):
    files, lengths = [], []
    for path in sources():
        with open(path) as f:
            files.append((f.read().count("\n"), os.path.relpath(path, ROOT)))
        for name, first, last in functions(path):
            lengths.append((last - first + 1, f"{os.path.relpath(path, ROOT)}:{first}", name))
    print(f"{len(files)} files, {len(lengths)} functions")
    for lines, path in sorted(files, reverse=True)[:count]:
        print(f"  {lines:4d} lines  {path}")
    for lines, where, name in sorted(lengths, reverse=True)[:count]:
        print(f"  {lines:4d} lines  {where}  {name}")


class SourceSizeTest(unittest.TestCase):
    def test_no_file_over_the_limit(self):
        over = []
        for path in sources():
            with open(path) as f:
                lines = f.read().count("\n")
            if lines > MAX_FILE_LINES:
                over.append(f"{os.path.relpath(path, ROOT)}: {lines} lines")
        self.assertEqual(over, [])

    def test_no_function_over_the_limit(self):
        over = []
        for path in sources():
            for name, first, last in functions(path):
                if last - first + 1 > MAX_FUNCTION_LINES:
                    over.append(f"{os.path.relpath(path, ROOT)}:{first}: {name}, "
                                f"{last - first + 1} lines")
        self.assertEqual(over, [])

    def test_the_scanner_finds_functions(self):
        text = ("namespace a {\n// f() {\nint F(int x) {\n  if (x) {\n    return 1;\n  }\n"
                "  auto g = [](int y) {\n    return y;\n  };\n  return g(x);\n}\n"
                "class C {\n public:\n  int G() const { return 2; }\n};\n}  // namespace a\n")
        self.assertEqual(cpp_functions(text), [("F", 3, 11), ("G", 14, 14)])


if __name__ == "__main__":
    if "--report" in sys.argv:
        report()
    else:
        unittest.main(argv=[sys.argv[0]] + sys.argv[1:], verbosity=2)
