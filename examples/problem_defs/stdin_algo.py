"""Medium and hard stdin problems: classic algorithms with multiple test cases, large inputs,
float output, multi-line output and deep recursion."""

from __future__ import annotations

import math
import random
from textwrap import dedent

from problem_defs.spec import Spec, lines


def _balanced(rng: random.Random, pairs: int) -> str:
    out, stack = [], []
    opens, close = "([{", {"(": ")", "[": "]", "{": "}"}
    while pairs or stack:
        if pairs and (not stack or rng.random() < 0.5):
            ch = rng.choice(opens)
            out.append(ch)
            stack.append(ch)
            pairs -= 1
        else:
            out.append(close[stack.pop()])
    return "".join(out)


def brackets() -> Spec:
    rng = random.Random(15)
    many = [_balanced(rng, rng.randint(1, 30)) for _ in range(10)]
    many += ["".join(rng.choice("()[]{}") for _ in range(rng.randint(1, 20))) for _ in range(10)]
    long_ok = _balanced(rng, 4999)
    return Spec(
        id="mc-stdin-015",
        title="Balanced brackets",
        difficulty="medium",
        statement=dedent("""\
            A string of brackets is balanced when every opening bracket is closed by a bracket
            of the same type, in the right order: "([]{})" is balanced, "([)]" and "((" are not.

            Input
            The first line holds the number of test cases t. Each of the next t lines holds a
            non-empty string made of the characters ( ) [ ] { }.

            Output
            For each string print YES if it is balanced and NO otherwise, one per line.

            Constraints
            - 1 <= t <= 100
            - 1 <= length of each string <= 10^4
            """),
        solutions=[dedent("""\
            import sys

            def balanced(s):
                match = {")": "(", "]": "[", "}": "{"}
                stack = []
                for ch in s:
                    if ch in "([{":
                        stack.append(ch)
                    elif not stack or stack.pop() != match[ch]:
                        return False
                return not stack

            def main():
                data = sys.stdin.read().split()
                t = int(data[0])
                for s in data[1:1 + t]:
                    print("YES" if balanced(s) else "NO")

            main()
            """)],
        tests=[lines(4, "([]{})", "([)]", "((", "{[()()]}"), lines(1, ")"), lines(1, "()"),
               lines(3, "(((", ")))", "}{"), lines(2, long_ok, long_ok + "("), lines(20, *many)],
        tags=["stack", "multiple test cases"],
    )


def range_sums() -> Spec:
    rng = random.Random(16)
    n, q = 50_000, 10_000
    arr = [rng.randint(-1000, 1000) for _ in range(n)]
    queries = []
    for _ in range(q):
        l, r = sorted((rng.randint(1, n), rng.randint(1, n)))
        queries.append([l, r])
    small = [rng.randint(-10, 10) for _ in range(10)]
    return Spec(
        id="mc-stdin-016",
        title="Range sums (large input)",
        difficulty="medium",
        statement=dedent("""\
            You are given an array a_1 ... a_n and q queries. Each query names two positions
            l and r; answer it with a_l + a_(l+1) + ... + a_r.

            The input is large: read it all at once (for example with sys.stdin.buffer.read())
            and answer each query in constant time.

            Input
            The first line holds n and q. The second line holds a_1 ... a_n. Each of the next q
            lines holds a query l r.

            Output
            Print q lines, the answer to each query in input order.

            Constraints
            - 1 <= n, q <= 2 * 10^5
            - -1000 <= a_i <= 1000
            - 1 <= l <= r <= n
            """),
        solutions=[dedent("""\
            import sys

            def main():
                data = sys.stdin.buffer.read().split()
                n, q = int(data[0]), int(data[1])
                prefix = [0] * (n + 1)
                for i in range(n):
                    prefix[i + 1] = prefix[i] + int(data[2 + i])
                out = []
                pos = 2 + n
                for _ in range(q):
                    l, r = int(data[pos]), int(data[pos + 1])
                    pos += 2
                    out.append(prefix[r] - prefix[l - 1])
                sys.stdout.write("\\n".join(map(str, out)) + "\\n")

            main()
            """)],
        tests=[lines([5, 3], [1, 2, 3, 4, 5], [1, 3], [2, 5], [4, 4]), lines([1, 1], [-7], [1, 1]),
               lines([3, 2], [1000, -1000, 1000], [1, 2], [1, 3]),
               lines([10, 4], small, [1, 10], [5, 5], [3, 8], [10, 10]),
               lines([n, q], arr, *queries)],
        tags=["prefix sums", "large input", "multi-line output"],
    )


def word_frequency() -> Spec:
    rng = random.Random(17)
    vocab = ["alpha", "beta", "gamma", "delta", "pi", "rho", "mu", "nu", "xi", "tau"]
    text = [" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 12))) for _ in range(40)]
    return Spec(
        id="mc-stdin-017",
        title="Word frequencies",
        difficulty="medium",
        statement=dedent("""\
            Count how often each word occurs in a text and list the words from the most to the
            least frequent. Words with the same count are listed in alphabetical order.

            Input
            One or more lines of text, up to the end of the input. Words are made of lower-case
            letters and separated by spaces or line breaks.

            Output
            For each distinct word print one line with the word, a space and its count, in the
            order described above.

            Constraints
            - the text holds between 1 and 10^5 words
            - each word has at most 20 letters
            """),
        solutions=[dedent("""\
            import sys
            from collections import Counter

            counts = Counter(sys.stdin.read().split())
            for word, c in sorted(counts.items(), key=lambda wc: (-wc[1], wc[0])):
                print(word, c)
            """)],
        tests=["the cat and the dog\nand the bird\n", "solo\n", "b a\nc\n", "zz zz aa aa mm\n",
               "x\n\n  x   y\n", "\n".join(text) + "\n"],
        tags=["sorting", "defined order", "multi-line output"],
    )


def run_length() -> Spec:
    rng = random.Random(18)
    runs = "".join(rng.choice("abc") * rng.randint(1, 12) for _ in range(2000))
    return Spec(
        id="mc-stdin-018",
        title="Run-length encoding",
        difficulty="medium",
        statement=dedent("""\
            Compress a string by replacing every maximal run of equal letters with the letter
            followed by the length of the run. For example aaabcc becomes a3b1c2.

            Input
            One line s of lower-case letters.

            Output
            Print the encoded string.

            Constraints
            - 1 <= length of s <= 10^5
            """),
        solutions=[dedent("""\
            s = input().strip()
            parts = []
            i = 0
            while i < len(s):
                j = i
                while j < len(s) and s[j] == s[i]:
                    j += 1
                parts.append(s[i] + str(j - i))
                i = j
            print("".join(parts))
            """),
            ("from itertools import groupby\n"
             "print(''.join(ch + str(len(list(g))) for ch, g in groupby(input().strip())))\n")],
        tests=["aaabcc\n", "a\n", "abc\n", "zzzzzzzzzzzz\n", "aabbaa\n", "q" * 20000 + "\n",
               runs + "\n"],
        tags=["strings"],
    )


def count_primes() -> Spec:
    return Spec(
        id="mc-stdin-019",
        title="Counting primes",
        difficulty="medium",
        statement=dedent("""\
            Count the prime numbers that are less than or equal to n.

            Input
            One integer n.

            Output
            Print how many primes p satisfy 2 <= p <= n.

            Constraints
            - 1 <= n <= 10^6
            """),
        solutions=[dedent("""\
            n = int(input())
            if n < 2:
                print(0)
            else:
                sieve = bytearray([1]) * (n + 1)
                sieve[0] = sieve[1] = 0
                i = 2
                while i * i <= n:
                    if sieve[i]:
                        sieve[i * i::i] = bytearray(len(range(i * i, n + 1, i)))
                    i += 1
                print(sum(sieve))
            """)],
        tests=["10\n", "1\n", "2\n", "3\n", "100\n", "999983\n", "1000000\n"],
        tags=["math", "sieve"],
    )


def max_subarray() -> Spec:
    rng = random.Random(20)
    cases = []
    for _ in range(8):
        m = rng.randint(1, 300)
        cases += [m, [rng.randint(-50, 50) for _ in range(m)]]
    big = [rng.randint(-10**9, 10**9) for _ in range(5000)]
    return Spec(
        id="mc-stdin-020",
        title="Best stretch",
        difficulty="medium",
        statement=dedent("""\
            For each array, find the largest sum of a non-empty run of consecutive elements.

            Input
            The first line holds the number of test cases t. Each test case is two lines: n,
            then n integers.

            Output
            For each test case print the largest sum on its own line.

            Constraints
            - 1 <= t <= 10
            - 1 <= n <= 10^5, and the n of all test cases add up to at most 2 * 10^5
            - -10^9 <= each integer <= 10^9
            """),
        solutions=[dedent("""\
            import sys

            def best(a):
                best_sum = cur = a[0]
                for x in a[1:]:
                    cur = max(x, cur + x)
                    best_sum = max(best_sum, cur)
                return best_sum

            data = sys.stdin.read().split()
            t = int(data[0])
            pos = 1
            for _ in range(t):
                n = int(data[pos])
                a = list(map(int, data[pos + 1:pos + 1 + n]))
                pos += 1 + n
                print(best(a))
            """)],
        tests=[lines(2, 5, [1, -2, 3, 4, -1], 3, [-3, -1, -2]), lines(1, 1, [-7]),
               lines(1, 4, [5, 5, 5, 5]), lines(1, 6, [2, -10, 3, -1, 3, -10]),
               lines(8, *cases), lines(1, 5000, big)],
        tags=["dynamic programming", "multiple test cases"],
    )


def merge_intervals() -> Spec:
    rng = random.Random(21)
    ivs = []
    for _ in range(500):
        a = rng.randint(0, 10000)
        ivs.append([a, a + rng.randint(0, 30)])
    return Spec(
        id="mc-stdin-021",
        title="Merge intervals",
        difficulty="medium",
        statement=dedent("""\
            You are given n closed intervals [l, r]. Merge every group of intervals that overlap
            or touch (share at least one point) into one interval, and print the result.

            Input
            The first line holds n. Each of the next n lines holds l and r.

            Output
            Print the merged intervals, one per line as "l r", sorted by their left end.

            Constraints
            - 1 <= n <= 10^5
            - 0 <= l <= r <= 10^9
            """),
        solutions=[dedent("""\
            import sys

            data = list(map(int, sys.stdin.read().split()))
            n = data[0]
            intervals = sorted(zip(data[1:2 * n + 1:2], data[2:2 * n + 2:2]))
            merged = []
            for l, r in intervals:
                if merged and l <= merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], r)
                else:
                    merged.append([l, r])
            print("\\n".join(f"{l} {r}" for l, r in merged))
            """)],
        tests=[lines(4, [1, 3], [2, 6], [8, 10], [15, 18]), lines(1, [5, 5]),
               lines(2, [1, 4], [4, 5]), lines(3, [10, 20], [0, 1], [2, 3]),
               lines(3, [1, 100], [2, 3], [50, 60]), lines(500, *ivs)],
        tags=["sorting", "multi-line output"],
    )


def _maze(rng: random.Random, r: int, c: int, wall: float) -> list[str]:
    grid = [["#" if rng.random() < wall else "." for _ in range(c)] for _ in range(r)]
    grid[0][0], grid[r - 1][c - 1] = "S", "T"
    return ["".join(row) for row in grid]


def grid_path() -> Spec:
    rng = random.Random(22)
    return Spec(
        id="mc-stdin-022",
        title="Shortest path in a maze",
        difficulty="medium",
        statement=dedent("""\
            A maze is a grid of cells: '.' is open floor, '#' is a wall, 'S' is the start and
            'T' is the target (both open). In one move you step to an open cell that shares a
            side with your cell. Find the fewest moves from S to T.

            Input
            The first line holds R and C. Each of the next R lines holds C characters.

            Output
            Print the fewest moves, or -1 if T cannot be reached.

            Constraints
            - 1 <= R, C <= 500
            - the grid holds exactly one S and exactly one T
            """),
        solutions=[dedent("""\
            import sys
            from collections import deque

            def main():
                data = sys.stdin.read().split()
                r, c = int(data[0]), int(data[1])
                grid = data[2:2 + r]
                for i in range(r):
                    for j in range(c):
                        if grid[i][j] == "S":
                            start = (i, j)
                dist = {start: 0}
                queue = deque([start])
                while queue:
                    i, j = queue.popleft()
                    if grid[i][j] == "T":
                        print(dist[(i, j)])
                        return
                    for ni, nj in ((i + 1, j), (i - 1, j), (i, j + 1), (i, j - 1)):
                        if 0 <= ni < r and 0 <= nj < c and grid[ni][nj] != "#" and (ni, nj) not in dist:
                            dist[(ni, nj)] = dist[(i, j)] + 1
                            queue.append((ni, nj))
                print(-1)

            main()
            """)],
        tests=[lines([3, 4], "S.#.", ".##.", "...T"), lines([1, 2], "ST"), lines([2, 2], "S#", "#T"),
               lines([3, 3], "T..", ".#.", "..S"), lines([1, 5], "S...T"),
               lines([40, 60], *_maze(rng, 40, 60, 0.25)), lines([40, 60], *_maze(rng, 40, 60, 0.45)),
               lines([200, 200], *_maze(rng, 200, 200, 0.2))],
        tags=["graphs", "bfs"],
    )


def components() -> Spec:
    rng = random.Random(23)
    n, m = 3000, 2500
    edges = [[rng.randint(1, n), rng.randint(1, n)] for _ in range(m)]
    return Spec(
        id="mc-stdin-023",
        title="Islands of friends",
        difficulty="medium",
        statement=dedent("""\
            There are n people, numbered 1 to n, and m friendships. Friendship is symmetric, and
            a friend of a friend is in the same group. How many separate groups are there?
            (A person with no friends is a group alone.)

            Input
            The first line holds n and m. Each of the next m lines holds u and v: u and v are
            friends. A pair may be repeated and u may equal v.

            Output
            Print the number of groups.

            Constraints
            - 1 <= n <= 10^5
            - 0 <= m <= 2 * 10^5
            """),
        solutions=[dedent("""\
            import sys

            def main():
                data = list(map(int, sys.stdin.read().split()))
                n, m = data[0], data[1]
                parent = list(range(n + 1))

                def find(x):
                    while parent[x] != x:
                        parent[x] = parent[parent[x]]
                        x = parent[x]
                    return x

                groups = n
                for k in range(m):
                    a, b = find(data[2 + 2 * k]), find(data[3 + 2 * k])
                    if a != b:
                        parent[a] = b
                        groups -= 1
                print(groups)

            main()
            """)],
        tests=[lines([5, 3], [1, 2], [2, 3], [4, 5]), lines([1, 0]), lines([4, 0]),
               lines([3, 3], [1, 1], [2, 3], [3, 2]), lines([4, 3], [1, 2], [3, 4], [2, 3]),
               lines([n, m], *edges)],
        tags=["graphs", "union-find"],
    )


def polygon_area() -> Spec:
    rng = random.Random(24)
    k = 200
    # A star-shaped polygon: points sorted by angle around the origin, so it is simple.
    pts = []
    for i in range(k):
        ang = 2 * math.pi * i / k
        rad = rng.randint(100, 10000)
        pts.append([round(rad * math.cos(ang)), round(rad * math.sin(ang))])
    return Spec(
        id="mc-stdin-024",
        title="Area of a polygon",
        difficulty="medium",
        statement=dedent("""\
            The vertices of a simple polygon (its sides do not cross) are given in order, either
            clockwise or counter-clockwise. Print its area.

            Input
            The first line holds n. Each of the next n lines holds the integer coordinates x y
            of one vertex.

            Output
            Print the area. An answer with absolute or relative error at most 1e-6 is accepted.

            Constraints
            - 3 <= n <= 10^5
            - -10^4 <= x, y <= 10^4
            """),
        solutions=[dedent("""\
            import sys

            data = list(map(int, sys.stdin.read().split()))
            n = data[0]
            xs, ys = data[1:2 * n + 1:2], data[2:2 * n + 2:2]
            twice = 0
            for i in range(n):
                j = (i + 1) % n
                twice += xs[i] * ys[j] - xs[j] * ys[i]
            print(f"{abs(twice) / 2:.6f}")
            """)],
        tests=[lines(4, [0, 0], [4, 0], [4, 3], [0, 3]), lines(3, [0, 0], [1, 0], [0, 1]),
               lines(3, [0, 0], [0, 1], [1, 0]), lines(5, [0, 0], [2, 0], [2, 2], [1, 1], [0, 2]),
               lines(4, [-10000, -10000], [10000, -10000], [10000, 10000], [-10000, 10000]),
               lines(k, *pts)],
        float_output=True,
        tags=["geometry", "float output"],
    )


def spiral() -> Spec:
    rng = random.Random(25)
    big = [[rng.randint(0, 99) for _ in range(30)] for _ in range(20)]
    return Spec(
        id="mc-stdin-025",
        title="Spiral walk",
        difficulty="medium",
        statement=dedent("""\
            Walk through a matrix in a clockwise spiral: along the top row from left to right,
            down the right column, back along the bottom row, up the left column, and so on
            inwards until every cell has been visited once.

            Input
            The first line holds R and C. Each of the next R lines holds C integers.

            Output
            Print the R * C values in the order visited, on one line separated by spaces.

            Constraints
            - 1 <= R, C <= 100
            """),
        solutions=[dedent("""\
            r, c = map(int, input().split())
            m = [list(map(int, input().split())) for _ in range(r)]
            top, bottom, left, right = 0, r - 1, 0, c - 1
            out = []
            while top <= bottom and left <= right:
                for j in range(left, right + 1):
                    out.append(m[top][j])
                for i in range(top + 1, bottom + 1):
                    out.append(m[i][right])
                if top < bottom and left < right:
                    for j in range(right - 1, left - 1, -1):
                        out.append(m[bottom][j])
                    for i in range(bottom - 1, top, -1):
                        out.append(m[i][left])
                top, bottom, left, right = top + 1, bottom - 1, left + 1, right - 1
            print(*out)
            """)],
        tests=[lines([3, 3], [1, 2, 3], [4, 5, 6], [7, 8, 9]), lines([1, 1], [5]),
               lines([1, 4], [1, 2, 3, 4]), lines([4, 1], 1, 2, 3, 4),
               lines([3, 4], [1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]),
               lines([2, 2], [1, 2], [3, 4]), lines([20, 30], *big)],
        tags=["simulation"],
    )


def pair_sums() -> Spec:
    rng = random.Random(26)
    big = [rng.randint(1, 1000) for _ in range(5000)]
    return Spec(
        id="mc-stdin-026",
        title="Pairs with a given sum",
        difficulty="medium",
        statement=dedent("""\
            Count the pairs of positions i < j with a_i + a_j = K.

            Input
            The first line holds n and K. The second line holds a_1 ... a_n.

            Output
            Print the number of pairs. It may not fit in 32 bits.

            Constraints
            - 1 <= n <= 2 * 10^5
            - -10^9 <= a_i, K <= 10^9
            """),
        solutions=[dedent("""\
            import sys
            from collections import defaultdict

            data = list(map(int, sys.stdin.read().split()))
            n, k = data[0], data[1]
            seen = defaultdict(int)
            pairs = 0
            for x in data[2:2 + n]:
                pairs += seen[k - x]
                seen[x] += 1
            print(pairs)
            """)],
        tests=[lines([5, 6], [1, 5, 3, 3, 2]), lines([1, 2], [1]), lines([4, 0], [0, 0, 0, 0]),
               lines([4, -3], [-1, -2, 5, -8]), lines([3, 100], [1, 2, 3]),
               lines([5000, 1000], big), lines([5000, 2], [1] * 5000)],
        tags=["hashing"],
    )


def next_greater() -> Spec:
    rng = random.Random(27)
    big = [rng.randint(1, 10**6) for _ in range(5000)]
    return Spec(
        id="mc-stdin-027",
        title="Next taller",
        difficulty="medium",
        statement=dedent("""\
            For each element of an array, find the first element to its right that is strictly
            greater than it.

            Input
            The first line holds n. The second line holds a_1 ... a_n.

            Output
            Print n integers on one line: for each position i the value of the first a_j with
            j > i and a_j > a_i, or -1 if there is none.

            Constraints
            - 1 <= n <= 2 * 10^5
            - 1 <= a_i <= 10^9
            """),
        solutions=[dedent("""\
            import sys

            data = list(map(int, sys.stdin.read().split()))
            n, a = data[0], data[1:]
            answer = [-1] * n
            stack = []  # positions still waiting for a greater element, values decreasing
            for i in range(n):
                while stack and a[stack[-1]] < a[i]:
                    answer[stack.pop()] = a[i]
                stack.append(i)
            print(*answer)
            """)],
        tests=[lines(5, [2, 1, 4, 3, 5]), lines(1, [9]), lines(4, [4, 3, 2, 1]), lines(4, [1, 2, 3, 4]),
               lines(5, [3, 3, 3, 3, 3]), lines(5000, big)],
        tags=["stack"],
    )


def tree_height() -> Spec:
    rng = random.Random(28)
    n_path = 10000
    labels = list(range(2, n_path + 1))
    rng.shuffle(labels)
    chain = [1] + labels
    path_edges = [[chain[i], chain[i + 1]] for i in range(n_path - 1)]
    rng.shuffle(path_edges)
    n_rand = 3000
    rand_edges = [[i, rng.randint(max(1, i - 5), i - 1)] for i in range(2, n_rand + 1)]
    rng.shuffle(rand_edges)
    return Spec(
        id="mc-stdin-028",
        title="Height of a deep tree",
        difficulty="hard",
        statement=dedent("""\
            A tree has n nodes numbered 1 to n and is rooted at node 1. Find its height (the
            number of edges on the longest path from the root down to a node) and the number of
            leaves (nodes with no children; when n = 1 the root is a leaf).

            The tree can be a single long chain, so a recursive search goes up to n calls deep:
            raise the recursion limit (sys.setrecursionlimit) or search iteratively.

            Input
            The first line holds n. Each of the next n - 1 lines holds an edge u v.

            Output
            Print the height and the number of leaves, separated by a space.

            Constraints
            - 1 <= n <= 10^5
            - the edges form a tree
            """),
        solutions=[dedent("""\
            import sys

            def main():
                sys.setrecursionlimit(1 << 20)
                data = list(map(int, sys.stdin.read().split()))
                n = data[0]
                adj = [[] for _ in range(n + 1)]
                for k in range(n - 1):
                    u, v = data[1 + 2 * k], data[2 + 2 * k]
                    adj[u].append(v)
                    adj[v].append(u)
                leaves = 0

                def dfs(node, parent):
                    nonlocal leaves
                    height = 0
                    has_child = False
                    for nxt in adj[node]:
                        if nxt != parent:
                            has_child = True
                            height = max(height, dfs(nxt, node) + 1)
                    if not has_child:
                        leaves += 1
                    return height

                height = dfs(1, 0)
                print(height, leaves)

            main()
            """),
            dedent("""\
            import sys
            from collections import deque

            data = list(map(int, sys.stdin.read().split()))
            n = data[0]
            adj = [[] for _ in range(n + 1)]
            for k in range(n - 1):
                u, v = data[1 + 2 * k], data[2 + 2 * k]
                adj[u].append(v)
                adj[v].append(u)
            depth = [-1] * (n + 1)
            depth[1] = 0
            queue = deque([1])
            leaves = 0
            while queue:
                node = queue.popleft()
                children = 0
                for nxt in adj[node]:
                    if depth[nxt] < 0:
                        depth[nxt] = depth[node] + 1
                        queue.append(nxt)
                        children += 1
                leaves += children == 0
            print(max(depth[1:]), leaves)
            """)],
        tests=[lines(5, [1, 2], [1, 3], [3, 4], [3, 5]), lines(1), lines(2, [2, 1]),
               lines(4, [1, 2], [1, 3], [1, 4]), lines(4, [4, 3], [3, 2], [2, 1]),
               lines(n_rand, *rand_edges), lines(n_path, *path_edges)],
        tags=["trees", "recursion", "large input"],
    )


def longest_increasing() -> Spec:
    rng = random.Random(29)
    big = [rng.randint(1, 10**9) for _ in range(5000)]
    return Spec(
        id="mc-stdin-029",
        title="Longest rising subsequence",
        difficulty="hard",
        statement=dedent("""\
            A subsequence keeps some elements of an array in their original order. Find the
            length of the longest subsequence whose elements are strictly increasing.

            Input
            The first line holds n. The second line holds a_1 ... a_n.

            Output
            Print the length of the longest strictly increasing subsequence.

            Constraints
            - 1 <= n <= 2 * 10^5 (a quadratic algorithm is too slow)
            - 1 <= a_i <= 10^9
            """),
        solutions=[dedent("""\
            import sys
            from bisect import bisect_left

            data = list(map(int, sys.stdin.read().split()))
            n = data[0]
            tails = []  # tails[k]: smallest possible last value of a rising run of length k + 1
            for x in data[1:1 + n]:
                k = bisect_left(tails, x)
                if k == len(tails):
                    tails.append(x)
                else:
                    tails[k] = x
            print(len(tails))
            """)],
        tests=[lines(8, [10, 9, 2, 5, 3, 7, 101, 18]), lines(1, [5]), lines(5, [7, 7, 7, 7, 7]),
               lines(5, [5, 4, 3, 2, 1]), lines(6, [1, 2, 3, 4, 5, 6]), lines(6, [3, 1, 2, 1, 8, 5]),
               lines(5000, big), lines(5000, list(range(1, 5001)))],
        tags=["dynamic programming", "binary search"],
    )


def dijkstra() -> Spec:
    rng = random.Random(30)
    n, m = 1000, 3000
    edges = [[rng.randint(1, n), rng.randint(1, n), rng.randint(0, 10**9)] for _ in range(m)]
    return Spec(
        id="mc-stdin-030",
        title="Cheapest routes",
        difficulty="hard",
        statement=dedent("""\
            A country has n towns and m one-way roads; each road has a non-negative toll. For
            every town, find the cheapest total toll of a trip from town 1 to it.

            Input
            The first line holds n and m. Each of the next m lines holds u v w: a road from u to
            v with toll w. There may be several roads between two towns, and loops.

            Output
            Print n integers on one line: the cheapest toll to reach towns 1, 2, ..., n from
            town 1 (0 for town 1 itself), or -1 for a town that cannot be reached.

            Constraints
            - 1 <= n <= 10^5
            - 0 <= m <= 2 * 10^5
            - 0 <= w <= 10^9
            """),
        solutions=[dedent("""\
            import heapq
            import sys

            def main():
                data = list(map(int, sys.stdin.read().split()))
                n, m = data[0], data[1]
                adj = [[] for _ in range(n + 1)]
                for k in range(m):
                    u, v, w = data[2 + 3 * k:5 + 3 * k]
                    adj[u].append((v, w))
                dist = [-1] * (n + 1)
                heap = [(0, 1)]
                while heap:
                    d, u = heapq.heappop(heap)
                    if dist[u] >= 0:
                        continue
                    dist[u] = d
                    for v, w in adj[u]:
                        if dist[v] < 0:
                            heapq.heappush(heap, (d + w, v))
                print(*dist[1:])

            main()
            """)],
        tests=[lines([4, 4], [1, 2, 5], [1, 3, 2], [3, 2, 1], [2, 4, 10]), lines([1, 0]),
               lines([3, 1], [2, 3, 4]), lines([3, 3], [1, 1, 7], [1, 2, 0], [2, 3, 0]),
               lines([3, 3], [1, 2, 10**9], [2, 3, 10**9], [1, 3, 10**9]),
               lines([n, m], *edges)],
        tags=["graphs", "shortest paths"],
    )


def edit_distance() -> Spec:
    rng = random.Random(31)

    def word(k: int) -> str:
        return "".join(rng.choice("abcd") for _ in range(k))

    a = word(400)
    b = list(a)
    for _ in range(60):
        b[rng.randrange(len(b))] = rng.choice("abcd")
    return Spec(
        id="mc-stdin-031",
        title="Edit distance",
        difficulty="hard",
        statement=dedent("""\
            One edit inserts a character, deletes a character or replaces a character by
            another. Find the fewest edits that turn string a into string b.

            Input
            Two lines: a, then b. Both are made of lower-case letters.

            Output
            Print the fewest edits.

            Constraints
            - 1 <= length of a, length of b <= 2000
            """),
        solutions=[dedent("""\
            a = input().strip()
            b = input().strip()
            prev = list(range(len(b) + 1))
            for i in range(1, len(a) + 1):
                cur = [i] + [0] * len(b)
                for j in range(1, len(b) + 1):
                    if a[i - 1] == b[j - 1]:
                        cur[j] = prev[j - 1]
                    else:
                        cur[j] = 1 + min(prev[j - 1], prev[j], cur[j - 1])
                prev = cur
            print(prev[len(b)])
            """)],
        tests=[lines("kitten", "sitting"), lines("a", "a"), lines("a", "b"), lines("abc", "xyzabc"),
               lines("intention", "execution"), lines("abcdef", "fedcba"), lines(a, "".join(b)),
               lines(word(300), word(250))],
        tags=["dynamic programming", "strings"],
    )


def inversions() -> Spec:
    rng = random.Random(32)
    big = [rng.randint(1, 10**9) for _ in range(5000)]
    return Spec(
        id="mc-stdin-032",
        title="Counting inversions",
        difficulty="hard",
        statement=dedent("""\
            An inversion of an array is a pair of positions i < j with a_i > a_j. Count the
            inversions.

            Input
            The first line holds n. The second line holds a_1 ... a_n.

            Output
            Print the number of inversions. It may not fit in 32 bits.

            Constraints
            - 1 <= n <= 2 * 10^5 (a quadratic algorithm is too slow)
            - 1 <= a_i <= 10^9
            """),
        solutions=[dedent("""\
            import sys

            def sort_count(a):
                if len(a) <= 1:
                    return a, 0
                mid = len(a) // 2
                left, x = sort_count(a[:mid])
                right, y = sort_count(a[mid:])
                merged, count, i, j = [], x + y, 0, 0
                while i < len(left) and j < len(right):
                    if left[i] <= right[j]:
                        merged.append(left[i])
                        i += 1
                    else:
                        merged.append(right[j])
                        count += len(left) - i  # right[j] is smaller than every left[i:]
                        j += 1
                merged += left[i:] + right[j:]
                return merged, count

            data = list(map(int, sys.stdin.read().split()))
            print(sort_count(data[1:1 + data[0]])[1])
            """),
            dedent("""\
            import sys

            data = list(map(int, sys.stdin.read().split()))
            n, a = data[0], data[1:]
            rank = {v: i + 1 for i, v in enumerate(sorted(set(a)))}
            tree = [0] * (len(rank) + 1)
            total = 0
            for seen, v in enumerate(a):
                r = rank[v]
                i, not_greater = r, 0
                while i > 0:
                    not_greater += tree[i]
                    i -= i & -i
                total += seen - not_greater
                i = r
                while i < len(tree):
                    tree[i] += 1
                    i += i & -i
            print(total)
            """)],
        tests=[lines(5, [2, 4, 1, 3, 5]), lines(1, [1]), lines(4, [1, 2, 3, 4]), lines(4, [4, 3, 2, 1]),
               lines(5, [2, 2, 2, 1, 1]), lines(5000, big), lines(5000, list(range(5000, 0, -1)))],
        tags=["sorting", "divide and conquer"],
    )


def specs() -> list[Spec]:
    return [brackets(), range_sums(), word_frequency(), run_length(), count_primes(), max_subarray(),
            merge_intervals(), grid_path(), components(), polygon_area(), spiral(), pair_sums(),
            next_greater(), tree_height(), longest_increasing(), dijkstra(), edit_distance(),
            inversions()]
