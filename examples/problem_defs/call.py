"""Call-based problems: plain functions and LeetCode-style ``class Solution`` methods.

A test's arguments are given as Python values here; the generator writes them as JSON, one
argument per line, and gets the expected return value by calling the reference solution.
"""

from __future__ import annotations

import random
from textwrap import dedent

from problem_defs.spec import Spec


def add() -> Spec:
    return Spec(
        id="mc-call-001",
        title="Add two numbers",
        difficulty="easy",
        statement=dedent("""\
            Write a function add(a, b) that returns the sum of the integers a and b.

            Constraints
            - -10^18 <= a, b <= 10^18
            """),
        fn_name="add",
        starter_code="def add(a: int, b: int) -> int:\n    ",
        solutions=["def add(a: int, b: int) -> int:\n    return a + b\n"],
        tests=[[2, 3], [0, 0], [-5, 3], [10**18, 10**18], [-1, -1], [7, -7]],
        tags=["warm-up"],
    )


def is_palindrome() -> Spec:
    return Spec(
        id="mc-call-002",
        title="Palindrome check",
        difficulty="easy",
        statement=dedent("""\
            Write a function is_palindrome(s) that returns True when the string s reads the same
            forwards and backwards, and False otherwise. Compare characters exactly: case,
            spaces and punctuation all count.

            Constraints
            - 0 <= length of s <= 1000
            """),
        fn_name="is_palindrome",
        starter_code="def is_palindrome(s: str) -> bool:\n    ",
        solutions=["def is_palindrome(s: str) -> bool:\n    return s == s[::-1]\n"],
        tests=[["level"], ["hello"], [""], ["a"], ["Aa"], ["never odd or even"], ["abba"],
               ["ab" * 300 + "a"]],
        tags=["warm-up", "strings"],
    )


def largest() -> Spec:
    rng = random.Random(103)
    return Spec(
        id="mc-call-003",
        title="Largest element",
        difficulty="easy",
        statement=dedent("""\
            Write a function largest(nums) that returns the largest value in the non-empty list
            of integers nums.

            Constraints
            - 1 <= len(nums) <= 1000
            - -10^9 <= nums[i] <= 10^9
            """),
        fn_name="largest",
        starter_code="def largest(nums: list[int]) -> int:\n    ",
        solutions=["def largest(nums: list[int]) -> int:\n    return max(nums)\n"],
        tests=[[[4, 1, 9, 3]], [[-2]], [[-8, -3, -5]], [[0, 0, 0]],
               [[rng.randint(-10**9, 10**9) for _ in range(1000)]]],
        tags=["warm-up"],
    )


def count_char() -> Spec:
    return Spec(
        id="mc-call-004",
        title="Count a character",
        difficulty="easy",
        statement=dedent("""\
            Write a function count_char(s, ch) that returns how many times the single character
            ch occurs in the string s. Upper and lower case are different characters.

            Constraints
            - 0 <= length of s <= 1000
            - ch is exactly one character
            """),
        fn_name="count_char",
        starter_code="def count_char(s: str, ch: str) -> int:\n    ",
        solutions=["def count_char(s: str, ch: str) -> int:\n    return s.count(ch)\n",
                   "def count_char(s: str, ch: str) -> int:\n    return sum(1 for c in s if c == ch)\n"],
        tests=[["banana", "a"], ["", "x"], ["aaaa", "a"], ["Apple", "a"], ["a b c", " "],
               ["xyz" * 300, "z"]],
        tags=["warm-up", "strings"],
    )


def running_sum() -> Spec:
    return Spec(
        id="mc-call-005",
        title="Running totals",
        difficulty="easy",
        statement=dedent("""\
            Given a list nums, return a list of the same length whose i-th element is
            nums[0] + nums[1] + ... + nums[i]. Implement Solution.runningSum.

            Constraints
            - 1 <= len(nums) <= 1000
            - -10^6 <= nums[i] <= 10^6
            """),
        fn_name="runningSum",
        starter_code=("from typing import List\n\n\nclass Solution:\n"
                      "    def runningSum(self, nums: List[int]) -> List[int]:\n        "),
        solutions=[dedent("""\
            from typing import List


            class Solution:
                def runningSum(self, nums: List[int]) -> List[int]:
                    out, total = [], 0
                    for x in nums:
                        total += x
                        out.append(total)
                    return out
            """),
            dedent("""\
            from itertools import accumulate
            from typing import List


            class Solution:
                def runningSum(self, nums: List[int]) -> List[int]:
                    return list(accumulate(nums))
            """)],
        tests=[[[1, 2, 3, 4]], [[5]], [[1, -1, 1, -1]], [[0, 0, 0]], [[10**6] * 1000]],
        tags=["prefix sums"],
    )


def two_sum() -> Spec:
    rng = random.Random(106)
    # Every other value is a multiple of 4 and the two chosen ones are 1 mod 4, so no other
    # pair can reach the target (which is 2 mod 4): the answer is unique.
    nums = [4 * v for v in rng.sample(range(-10**5, 10**5), 800)]
    i, j = 123, 654
    nums[i], nums[j] = 4 * rng.randint(-10**5, 10**5) + 1, 4 * rng.randint(-10**5, 10**5) + 1
    return Spec(
        id="mc-call-006",
        title="Two numbers that add up",
        difficulty="easy",
        statement=dedent("""\
            Given a list of integers nums and an integer target, exactly one pair of different
            positions i < j has nums[i] + nums[j] == target. Return [i, j], the smaller index
            first. Implement Solution.twoSum.

            Constraints
            - 2 <= len(nums) <= 10^4
            - -10^9 <= nums[i], target <= 10^9
            - exactly one answer exists
            """),
        fn_name="twoSum",
        starter_code=("from typing import List\n\n\nclass Solution:\n"
                      "    def twoSum(self, nums: List[int], target: int) -> List[int]:\n        "),
        solutions=[dedent("""\
            from typing import List


            class Solution:
                def twoSum(self, nums: List[int], target: int) -> List[int]:
                    seen = {}
                    for j, x in enumerate(nums):
                        if target - x in seen:
                            return [seen[target - x], j]
                        seen[x] = j
                    return []
            """)],
        tests=[[[2, 7, 11, 15], 9], [[3, 3], 6], [[3, 2, 4], 6], [[-1, -2, -3, -4, -5], -8],
               [[0, 4, 3, 0], 0], [nums, nums[i] + nums[j]]],
        tags=["hashing", "defined order"],
    )


def group_anagrams() -> Spec:
    rng = random.Random(107)
    bases = ["listen", "stone", "night", "apple", "tops"]
    words = []
    for _ in range(40):
        w = list(rng.choice(bases))
        rng.shuffle(w)
        words.append("".join(w))
    return Spec(
        id="mc-call-007",
        title="Group the anagrams",
        difficulty="medium",
        statement=dedent("""\
            Two words are anagrams when one is a rearrangement of the letters of the other.
            Split a list of words into groups of anagrams. Implement Solution.groupAnagrams.

            The answer has a fixed order: the words inside each group are sorted
            alphabetically, and the groups are sorted by their first word. A word that occurs
            several times in the input occurs as many times in its group.

            Constraints
            - 1 <= len(words) <= 10^4
            - 0 <= length of each word <= 100, lower-case letters only
            """),
        fn_name="groupAnagrams",
        starter_code=("from typing import List\n\n\nclass Solution:\n"
                      "    def groupAnagrams(self, words: List[str]) -> List[List[str]]:\n        "),
        solutions=[dedent("""\
            from collections import defaultdict
            from typing import List


            class Solution:
                def groupAnagrams(self, words: List[str]) -> List[List[str]]:
                    groups = defaultdict(list)
                    for w in words:
                        groups["".join(sorted(w))].append(w)
                    return sorted(sorted(g) for g in groups.values())
            """)],
        tests=[[["eat", "tea", "tan", "ate", "nat", "bat"]], [["a"]], [[""]], [["ab", "ba", "ab"]],
               [["abc", "def", "ghi"]], [["", "b", ""]], [words]],
        tags=["hashing", "sorting", "defined order"],
    )


def top_k_frequent() -> Spec:
    rng = random.Random(108)
    big = [int(rng.triangular(0, 100, 0)) for _ in range(3000)]
    return Spec(
        id="mc-call-008",
        title="Most frequent values",
        difficulty="medium",
        statement=dedent("""\
            Return the k values that occur most often in nums, from the most frequent to the
            least frequent; among values that occur equally often, the smaller value comes
            first. Implement Solution.topKFrequent.

            Constraints
            - 1 <= len(nums) <= 10^5
            - 1 <= k <= number of distinct values in nums
            """),
        fn_name="topKFrequent",
        starter_code=("from typing import List\n\n\nclass Solution:\n"
                      "    def topKFrequent(self, nums: List[int], k: int) -> List[int]:\n        "),
        solutions=[dedent("""\
            from collections import Counter
            from typing import List


            class Solution:
                def topKFrequent(self, nums: List[int], k: int) -> List[int]:
                    counts = Counter(nums)
                    order = sorted(counts, key=lambda v: (-counts[v], v))
                    return order[:k]
            """)],
        tests=[[[1, 1, 1, 2, 2, 3], 2], [[7], 1], [[4, 4, 5, 5, 6], 3], [[3, 2, 1], 2],
               [[-1, -1, 2, 2, -3], 2], [big, 10]],
        tags=["hashing", "sorting", "defined order"],
    )


def _grid(rng: random.Random, r: int, c: int, land: float) -> list[str]:
    return ["".join("1" if rng.random() < land else "0" for _ in range(c)) for _ in range(r)]


def num_islands() -> Spec:
    rng = random.Random(109)
    return Spec(
        id="mc-call-009",
        title="Count the islands",
        difficulty="medium",
        statement=dedent("""\
            A map is a list of equal-length strings of '1' (land) and '0' (water). An island is
            a group of land cells connected through shared sides (not corners). Return the
            number of islands. Implement Solution.numIslands.

            Constraints
            - 1 <= number of rows, number of columns <= 300
            """),
        fn_name="numIslands",
        starter_code=("from typing import List\n\n\nclass Solution:\n"
                      "    def numIslands(self, grid: List[str]) -> int:\n        "),
        solutions=[dedent("""\
            from typing import List


            class Solution:
                def numIslands(self, grid: List[str]) -> int:
                    rows, cols = len(grid), len(grid[0])
                    seen = [[False] * cols for _ in range(rows)]
                    islands = 0
                    for i in range(rows):
                        for j in range(cols):
                            if grid[i][j] != "1" or seen[i][j]:
                                continue
                            islands += 1
                            seen[i][j] = True
                            stack = [(i, j)]
                            while stack:
                                a, b = stack.pop()
                                for x, y in ((a + 1, b), (a - 1, b), (a, b + 1), (a, b - 1)):
                                    inside = 0 <= x < rows and 0 <= y < cols
                                    if inside and grid[x][y] == "1" and not seen[x][y]:
                                        seen[x][y] = True
                                        stack.append((x, y))
                    return islands
            """)],
        tests=[[["11000", "11000", "00100", "00011"]], [["0"]], [["1"]], [["101", "010", "101"]],
               [["111", "101", "111"]], [_grid(rng, 30, 40, 0.4)], [_grid(rng, 100, 100, 0.6)]],
        tags=["graphs", "flood fill"],
    )


def coin_change() -> Spec:
    return Spec(
        id="mc-call-010",
        title="Fewest coins",
        difficulty="medium",
        statement=dedent("""\
            You have unlimited coins of each value in coins. Return the fewest coins that add up
            exactly to amount, or -1 if no combination does. Implement Solution.coinChange.

            Constraints
            - 1 <= len(coins) <= 12
            - 1 <= coins[i] <= 10^4
            - 0 <= amount <= 10^4
            """),
        fn_name="coinChange",
        starter_code=("from typing import List\n\n\nclass Solution:\n"
                      "    def coinChange(self, coins: List[int], amount: int) -> int:\n        "),
        solutions=[dedent("""\
            from typing import List


            class Solution:
                def coinChange(self, coins: List[int], amount: int) -> int:
                    inf = amount + 1
                    best = [0] + [inf] * amount
                    for total in range(1, amount + 1):
                        for c in coins:
                            if c <= total and best[total - c] + 1 < best[total]:
                                best[total] = best[total - c] + 1
                    return best[amount] if best[amount] < inf else -1
            """)],
        tests=[[[1, 2, 5], 11], [[2], 3], [[1], 0], [[7], 14], [[186, 419, 83, 408], 6249],
               [[3, 7, 405, 436], 8839], [[2, 4, 6], 9999]],
        tags=["dynamic programming"],
    )


def flatten() -> Spec:
    rng = random.Random(111)

    def nested(depth: int) -> list:
        out = []
        for _ in range(rng.randint(0, 4)):
            out.append(nested(depth - 1) if depth and rng.random() < 0.4 else rng.randint(-99, 99))
        return out

    deep: list = [1]
    for k in range(2, 60):
        deep = [deep, k]
    return Spec(
        id="mc-call-011",
        title="Flatten a nested list",
        difficulty="medium",
        statement=dedent("""\
            Write a function flatten(nested) that takes a list whose elements are integers or
            lists of the same kind, nested to any depth, and returns a flat list of all the
            integers in the order they appear from left to right.

            Constraints
            - at most 10^4 integers in all
            - nesting depth at most 100
            """),
        fn_name="flatten",
        starter_code="def flatten(nested: list) -> list[int]:\n    ",
        solutions=[dedent("""\
            def flatten(nested: list) -> list[int]:
                out = []
                for item in nested:
                    if isinstance(item, list):
                        out.extend(flatten(item))
                    else:
                        out.append(item)
                return out
            """),
            dedent("""\
            def flatten(nested: list) -> list[int]:
                out, stack = [], [iter(nested)]
                while stack:
                    item = next(stack[-1], StopIteration)
                    if item is StopIteration:
                        stack.pop()
                    elif isinstance(item, list):
                        stack.append(iter(item))
                    else:
                        out.append(item)
                return out
            """)],
        tests=[[[1, [2, [3, 4]], 5]], [[]], [[[[[]]]]], [[1, 2, 3]], [[[1], [], [2, [3]]]],
               [deep], [nested(6)], [nested(8)]],
        tags=["recursion"],
    )


def subsets() -> Spec:
    return Spec(
        id="mc-call-012",
        title="All subsets in order",
        difficulty="medium",
        statement=dedent("""\
            Given a list of distinct integers, return every subset of it, each exactly once.
            Implement Solution.subsets.

            The answer has a fixed order: each subset lists its elements in increasing order,
            and the subsets are sorted first by size (the empty subset first) and then, among
            subsets of the same size, lexicographically by their elements.

            Constraints
            - 0 <= len(nums) <= 12
            - -100 <= nums[i] <= 100, all distinct
            """),
        fn_name="subsets",
        starter_code=("from typing import List\n\n\nclass Solution:\n"
                      "    def subsets(self, nums: List[int]) -> List[List[int]]:\n        "),
        solutions=[dedent("""\
            from itertools import combinations
            from typing import List


            class Solution:
                def subsets(self, nums: List[int]) -> List[List[int]]:
                    nums = sorted(nums)
                    return [list(c) for size in range(len(nums) + 1) for c in combinations(nums, size)]
            """),
            dedent("""\
            from typing import List


            class Solution:
                def subsets(self, nums: List[int]) -> List[List[int]]:
                    nums = sorted(nums)
                    out = []
                    for mask in range(1 << len(nums)):
                        out.append([x for i, x in enumerate(nums) if mask >> i & 1])
                    return sorted(out, key=lambda s: (len(s), s))
            """)],
        tests=[[[1, 2, 3]], [[]], [[5]], [[3, -1]], [[10, 0, -10, 5]], [list(range(10, 0, -1))]],
        tags=["recursion", "defined order"],
    )


def lcs() -> Spec:
    rng = random.Random(113)

    def word(k: int) -> str:
        return "".join(rng.choice("acgt") for _ in range(k))

    return Spec(
        id="mc-call-013",
        title="Longest common subsequence",
        difficulty="medium",
        statement=dedent("""\
            A subsequence of a string keeps some of its characters in their original order.
            Return the length of the longest string that is a subsequence of both a and b.
            Implement Solution.longestCommonSubsequence.

            Constraints
            - 1 <= len(a), len(b) <= 1000
            - lower-case letters only
            """),
        fn_name="longestCommonSubsequence",
        starter_code=("class Solution:\n"
                      "    def longestCommonSubsequence(self, a: str, b: str) -> int:\n        "),
        solutions=[dedent("""\
            class Solution:
                def longestCommonSubsequence(self, a: str, b: str) -> int:
                    prev = [0] * (len(b) + 1)
                    for ch in a:
                        cur = [0]
                        for j, other in enumerate(b):
                            cur.append(prev[j] + 1 if ch == other else max(prev[j + 1], cur[j]))
                        prev = cur
                    return prev[-1]
            """)],
        tests=[["abcde", "ace"], ["abc", "abc"], ["abc", "def"], ["a", "a"], ["aaaa", "aa"],
               [word(300), word(300)], [word(50), word(400)]],
        tags=["dynamic programming", "strings"],
    )


def median_two() -> Spec:
    rng = random.Random(114)
    a = sorted(rng.randint(-10**6, 10**6) for _ in range(999))
    b = sorted(rng.randint(-10**6, 10**6) for _ in range(1000))
    return Spec(
        id="mc-call-014",
        title="Median of two sorted lists",
        difficulty="hard",
        statement=dedent("""\
            Given two lists a and b, each sorted in non-decreasing order, return the median of
            all their elements together: the middle element when the total count is odd, and the
            mean of the two middle elements when it is even. Return it as a float; an answer
            with absolute or relative error at most 1e-6 is accepted. Aim for a running time
            logarithmic in the lengths. Implement Solution.findMedianSortedArrays.

            Constraints
            - 0 <= len(a), len(b) <= 1000, and len(a) + len(b) >= 1
            - -10^6 <= a[i], b[i] <= 10^6
            """),
        fn_name="findMedianSortedArrays",
        starter_code=("from typing import List\n\n\nclass Solution:\n"
                      "    def findMedianSortedArrays(self, a: List[int], b: List[int]) -> float:\n        "),
        solutions=[dedent("""\
            from typing import List


            class Solution:
                def findMedianSortedArrays(self, a: List[int], b: List[int]) -> float:
                    if len(a) > len(b):
                        a, b = b, a
                    m, n = len(a), len(b)
                    half = (m + n + 1) // 2
                    lo, hi = 0, m
                    while True:
                        i = (lo + hi) // 2  # elements taken from a into the left half
                        j = half - i
                        a_left = a[i - 1] if i > 0 else float("-inf")
                        a_right = a[i] if i < m else float("inf")
                        b_left = b[j - 1] if j > 0 else float("-inf")
                        b_right = b[j] if j < n else float("inf")
                        if a_left > b_right:
                            hi = i - 1
                        elif b_left > a_right:
                            lo = i + 1
                        else:
                            left_max = max(a_left, b_left)
                            if (m + n) % 2:
                                return float(left_max)
                            return (left_max + min(a_right, b_right)) / 2
            """),
            dedent("""\
            from typing import List


            class Solution:
                def findMedianSortedArrays(self, a: List[int], b: List[int]) -> float:
                    merged = sorted(a + b)
                    k = len(merged)
                    if k % 2:
                        return float(merged[k // 2])
                    return (merged[k // 2 - 1] + merged[k // 2]) / 2
            """)],
        tests=[[[1, 3], [2]], [[1, 2], [3, 4]], [[], [5]], [[2], []], [[1, 1, 1], [1, 1]],
               [[-5, 3, 6, 12, 15], [-12, -10, -6, -3, 4, 10]], [[1, 2], [-1, 3]], [a, b], [a, b[:500]]],
        float_output=True,
        tags=["binary search", "float output"],
    )


def trap_rain() -> Spec:
    rng = random.Random(115)
    return Spec(
        id="mc-call-015",
        title="Rain between the walls",
        difficulty="hard",
        statement=dedent("""\
            heights[i] is the height of a wall of width 1 at position i. After heavy rain, water
            fills every place where it cannot run off to the left or the right. Return the total
            amount of water held, in unit squares. Implement Solution.trap.

            Constraints
            - 1 <= len(heights) <= 2 * 10^4
            - 0 <= heights[i] <= 10^5
            """),
        fn_name="trap",
        starter_code=("from typing import List\n\n\nclass Solution:\n"
                      "    def trap(self, heights: List[int]) -> int:\n        "),
        solutions=[dedent("""\
            from typing import List


            class Solution:
                def trap(self, heights: List[int]) -> int:
                    left, right = 0, len(heights) - 1
                    left_max = right_max = water = 0
                    while left < right:
                        if heights[left] < heights[right]:
                            left_max = max(left_max, heights[left])
                            water += left_max - heights[left]
                            left += 1
                        else:
                            right_max = max(right_max, heights[right])
                            water += right_max - heights[right]
                            right -= 1
                    return water
            """),
            dedent("""\
            from typing import List


            class Solution:
                def trap(self, heights: List[int]) -> int:
                    n = len(heights)
                    best_left, best_right = [0] * n, [0] * n
                    for i in range(n):
                        best_left[i] = max(heights[i], best_left[i - 1] if i else 0)
                    for i in range(n - 1, -1, -1):
                        best_right[i] = max(heights[i], best_right[i + 1] if i < n - 1 else 0)
                    return sum(min(best_left[i], best_right[i]) - heights[i] for i in range(n))
            """)],
        tests=[[[0, 1, 0, 2, 1, 0, 1, 3, 2, 1, 2, 1]], [[5]], [[1, 2, 3, 4]], [[4, 2, 0, 3, 2, 5]],
               [[3, 0, 3]], [[0, 0, 0]], [[rng.randint(0, 10**5) for _ in range(5000)]],
               [[rng.randint(0, 50) for _ in range(500)]]],
        tags=["two pointers"],
    )


def word_ladder() -> Spec:
    rng = random.Random(116)
    letters = "abcde"
    words = sorted({"".join(rng.choice(letters) for _ in range(4)) for _ in range(300)})
    begin, end = words[0], words[-1]
    return Spec(
        id="mc-call-016",
        title="Word ladder",
        difficulty="hard",
        statement=dedent("""\
            A ladder from begin to end is a sequence of words, starting with begin and ending
            with end, in which consecutive words differ in exactly one position and every word
            after begin is in the list words. Return the number of words in the shortest ladder,
            or 0 if there is none. Implement Solution.ladderLength.

            Constraints
            - 1 <= length of begin <= 10; all words have the same length as begin
            - 1 <= len(words) <= 5000, lower-case letters only, no repeats
            - begin != end
            """),
        fn_name="ladderLength",
        starter_code=("from typing import List\n\n\nclass Solution:\n"
                      "    def ladderLength(self, begin: str, end: str, words: List[str]) -> int:\n        "),
        solutions=[dedent("""\
            from collections import deque
            from typing import List


            class Solution:
                def ladderLength(self, begin: str, end: str, words: List[str]) -> int:
                    unused = set(words)
                    if end not in unused:
                        return 0
                    queue = deque([(begin, 1)])
                    unused.discard(begin)
                    while queue:
                        word, steps = queue.popleft()
                        if word == end:
                            return steps
                        for i in range(len(word)):
                            for ch in "abcdefghijklmnopqrstuvwxyz":
                                nxt = word[:i] + ch + word[i + 1:]
                                if nxt in unused:
                                    unused.discard(nxt)
                                    queue.append((nxt, steps + 1))
                    return 0
            """)],
        tests=[["hit", "cog", ["hot", "dot", "dog", "lot", "log", "cog"]],
               ["hit", "cog", ["hot", "dot", "dog", "lot", "log"]], ["a", "c", ["a", "b", "c"]],
               ["ab", "cd", ["ad", "cd"]], ["abc", "xyz", ["abz", "ayz", "xyz", "xbc"]],
               ["aaaa", "bbbb", ["aaab", "aabb", "abbb", "bbbb", "baaa", "bbaa"]],
               [begin, end, words], ["aaaa", end, [w for w in words if w != end][:150] + [end]]],
        tags=["graphs", "bfs"],
    )


def specs() -> list[Spec]:
    return [add(), is_palindrome(), largest(), count_char(), running_sum(), two_sum(), group_anagrams(),
            top_k_frequent(), num_islands(), coin_change(), flatten(), subsets(), lcs(), median_two(),
            trap_rain(), word_ladder()]
