"""Easy stdin problems: ten very easy warm-ups for the demo's tiny model, then a few more."""

from __future__ import annotations

import random
from textwrap import dedent

from problem_defs.spec import Spec, lines


def sum_two() -> Spec:
    return Spec(
        id="mc-stdin-001",
        title="Sum of two integers",
        difficulty="easy",
        statement=dedent("""\
            Read two integers and print their sum.

            Input
            Two integers a and b, separated by whitespace.

            Output
            Print a + b.

            Constraints
            - -10^18 <= a, b <= 10^18
            """),
        solutions=[
            "a, b = map(int, input().split())\nprint(a + b)\n",
            "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n",
        ],
        tests=["3 5\n", "0 0\n", "-7 4\n", "1000000000000000000 1000000000000000000\n",
               "-1000000000000000000 1\n", "123 -123\n"],
        tags=["warm-up"],
    )


def reverse_string() -> Spec:
    return Spec(
        id="mc-stdin-002",
        title="Reverse a line",
        difficulty="easy",
        statement=dedent("""\
            Print the given line of text backwards.

            Input
            One line s. It may contain spaces but does not start or end with one.

            Output
            Print the characters of s in reverse order.

            Constraints
            - 1 <= length of s <= 1000
            - s consists of printable ASCII characters
            """),
        solutions=["s = input()\nprint(s[::-1])\n"],
        tests=["hello\n", "a\n", "racecar\n", "ab cd\n", "12345\n", "Hello, World!\n",
               "x" * 500 + "y" * 500 + "\n"],
        tags=["warm-up", "strings"],
    )


def max_of_list() -> Spec:
    rng = random.Random(3)
    big = [rng.randint(-10**9, 10**9) for _ in range(1000)]
    return Spec(
        id="mc-stdin-003",
        title="Largest number",
        difficulty="easy",
        statement=dedent("""\
            Given a list of integers, print the largest one.

            Input
            The first line holds n. The second line holds n integers a_1 ... a_n.

            Output
            Print the maximum of a_1 ... a_n.

            Constraints
            - 1 <= n <= 1000
            - -10^9 <= a_i <= 10^9
            """),
        solutions=["n = int(input())\na = list(map(int, input().split()))\nprint(max(a))\n"],
        tests=[lines(5, [3, 9, 2, 7, 4]), lines(1, [42]), lines(3, [-5, -2, -9]),
               lines(4, [7, 7, 7, 7]), lines(2, [-10**9, 10**9]), lines(1000, big)],
        tags=["warm-up"],
    )


def count_vowels() -> Spec:
    return Spec(
        id="mc-stdin-004",
        title="Count the vowels",
        difficulty="easy",
        statement=dedent("""\
            Count how many vowels a line of text contains. The vowels are a, e, i, o and u,
            in lower or upper case; y is not a vowel.

            Input
            One line of text.

            Output
            Print the number of vowels.

            Constraints
            - 1 <= length of the line <= 1000
            """),
        solutions=['s = input()\nprint(sum(1 for ch in s.lower() if ch in "aeiou"))\n'],
        tests=["Programming is fun\n", "rhythm\n", "AEIOU aeiou\n", "y\n", "Queueing\n",
               "The quick brown fox jumps over the lazy dog\n"],
        tags=["warm-up", "strings"],
    )


def count_up() -> Spec:
    return Spec(
        id="mc-stdin-005",
        title="Count up",
        difficulty="easy",
        statement=dedent("""\
            Print the numbers from 1 to n, one per line.

            Input
            One integer n.

            Output
            n lines: the i-th line holds i.

            Constraints
            - 1 <= n <= 1000
            """),
        solutions=["n = int(input())\nfor i in range(1, n + 1):\n    print(i)\n"],
        tests=["4\n", "1\n", "2\n", "10\n", "1000\n"],
        tags=["warm-up", "multi-line output"],
    )


def even_or_odd() -> Spec:
    return Spec(
        id="mc-stdin-006",
        title="Even or odd",
        difficulty="easy",
        statement=dedent("""\
            Say whether an integer is even or odd.

            Input
            One integer n.

            Output
            Print even if n is even and odd otherwise (lower case).

            Constraints
            - -10^18 <= n <= 10^18
            """),
        solutions=['n = int(input())\nprint("even" if n % 2 == 0 else "odd")\n'],
        tests=["7\n", "0\n", "-3\n", "-4\n", "1000000000000000000\n", "999999999999999999\n"],
        tags=["warm-up"],
    )


def shout() -> Spec:
    return Spec(
        id="mc-stdin-007",
        title="Shout it",
        difficulty="easy",
        statement=dedent("""\
            Convert a line of text to upper case. Characters that are not letters stay as
            they are.

            Input
            One line of ASCII text.

            Output
            The same line with every lower-case letter replaced by its upper-case form.

            Constraints
            - 1 <= length of the line <= 1000
            """),
        solutions=["print(input().upper())\n"],
        tests=["hello world\n", "A\n", "already LOUD\n", "mixed 123 CaSe!\n", "z\n"],
        tags=["warm-up", "strings"],
    )


def sum_of_list() -> Spec:
    rng = random.Random(8)
    vals = [rng.randint(-10**9, 10**9) for _ in range(2000)]
    return Spec(
        id="mc-stdin-008",
        title="Total of a list",
        difficulty="easy",
        statement=dedent("""\
            Print the sum of n integers.

            Input
            The first line holds n. The next line holds n integers.

            Output
            Print their sum.

            Constraints
            - 1 <= n <= 2000
            - -10^9 <= each integer <= 10^9
            """),
        solutions=["n = int(input())\nprint(sum(map(int, input().split())))\n"],
        tests=[lines(4, [1, 2, 3, 4]), lines(1, [-5]), lines(3, [10**9, 10**9, 10**9]),
               lines(2, [5, -5]), lines(2000, vals)],
        tags=["warm-up"],
    )


def min_of_pairs() -> Spec:
    rng = random.Random(9)
    pairs = [[rng.randint(-100, 100), rng.randint(-100, 100)] for _ in range(100)]
    return Spec(
        id="mc-stdin-009",
        title="Smaller of two, many times",
        difficulty="easy",
        statement=dedent("""\
            For each of several pairs of integers, print the smaller number of the pair.

            Input
            The first line holds the number of test cases t. Each of the next t lines holds
            two integers a and b.

            Output
            For each test case print min(a, b) on its own line.

            Constraints
            - 1 <= t <= 100
            - -10^9 <= a, b <= 10^9
            """),
        solutions=[dedent("""\
            t = int(input())
            for _ in range(t):
                a, b = map(int, input().split())
                print(min(a, b))
            """)],
        tests=[lines(3, [1, 2], [5, 4], [-1, -1]), lines(1, [0, 0]),
               lines(2, [-10**9, 10**9], [10**9, -10**9]), lines(2, [3, 3], [-7, 2]),
               lines(100, *pairs)],
        tags=["warm-up", "multiple test cases"],
    )


def fizz_buzz() -> Spec:
    return Spec(
        id="mc-stdin-010",
        title="Fizz and buzz",
        difficulty="easy",
        statement=dedent("""\
            Count from 1 to n, but replace multiples of 3 by Fizz, multiples of 5 by Buzz and
            multiples of both by FizzBuzz.

            Input
            One integer n.

            Output
            n lines. Line i holds FizzBuzz if i is divisible by 15, otherwise Fizz if it is
            divisible by 3, otherwise Buzz if it is divisible by 5, otherwise the number i.

            Constraints
            - 1 <= n <= 10000
            """),
        solutions=[dedent("""\
            n = int(input())
            for i in range(1, n + 1):
                if i % 15 == 0:
                    print("FizzBuzz")
                elif i % 3 == 0:
                    print("Fizz")
                elif i % 5 == 0:
                    print("Buzz")
                else:
                    print(i)
            """)],
        tests=["15\n", "1\n", "3\n", "5\n", "16\n", "100\n"],
        tags=["warm-up", "multi-line output"],
    )


def average() -> Spec:
    rng = random.Random(11)
    vals = [rng.randint(-10**6, 10**6) for _ in range(1000)]
    return Spec(
        id="mc-stdin-011",
        title="Mean value",
        difficulty="easy",
        statement=dedent("""\
            Print the arithmetic mean of n integers.

            Input
            The first line holds n. The second line holds n integers.

            Output
            Print the mean as a decimal number. An answer with absolute or relative error at
            most 1e-6 is accepted.

            Constraints
            - 1 <= n <= 1000
            - -10^6 <= each integer <= 10^6
            """),
        solutions=['n = int(input())\na = list(map(int, input().split()))\nprint(f"{sum(a) / n:.10f}")\n'],
        tests=[lines(4, [1, 2, 3, 5]), lines(1, [7]), lines(3, [1, 1, 2]), lines(2, [-3, 2]),
               lines(3, [10**6, 10**6, -10**6]), lines(1000, vals)],
        float_output=True,
        tags=["float output"],
    )


def circle() -> Spec:
    return Spec(
        id="mc-stdin-012",
        title="Circle measures",
        difficulty="easy",
        statement=dedent("""\
            Given the radius of a circle, print its area and its circumference.

            Input
            One integer r, the radius.

            Output
            Print two numbers separated by a space: the area pi * r^2 and the circumference
            2 * pi * r. Answers with absolute or relative error at most 1e-6 are accepted.

            Constraints
            - 1 <= r <= 10^4
            """),
        solutions=['import math\nr = int(input())\nprint(f"{math.pi * r * r:.9f} {2 * math.pi * r:.9f}")\n'],
        tests=["1\n", "2\n", "10\n", "7\n", "10000\n", "333\n"],
        float_output=True,
        tags=["float output"],
    )


def count_words() -> Spec:
    return Spec(
        id="mc-stdin-013",
        title="Count the words",
        difficulty="easy",
        statement=dedent("""\
            A word is a maximal run of characters that are not spaces. Count the words on a
            line. Words may be separated by more than one space, and the line may start or
            end with spaces.

            Input
            One line of text containing at least one word.

            Output
            Print the number of words.

            Constraints
            - 1 <= length of the line <= 1000
            """),
        solutions=["print(len(input().split()))\n"],
        tests=["the cat sat on the mat\n", "one\n", "   padded   words   \n", "a  b   c    d\n",
               "x " * 400 + "\n", "don't-split hyphens, or commas\n"],
        tags=["strings"],
    )


def letter_grades() -> Spec:
    rng = random.Random(14)
    scores = [rng.randint(0, 100) for _ in range(50)]
    return Spec(
        id="mc-stdin-014",
        title="Letter grades",
        difficulty="easy",
        statement=dedent("""\
            Turn exam scores into letter grades: 90 or more is A, 80 to 89 is B, 70 to 79 is C,
            60 to 69 is D, and below 60 is F.

            Input
            The first line holds the number of test cases t. Each of the next t lines holds
            one score.

            Output
            For each score print its letter on its own line.

            Constraints
            - 1 <= t <= 100
            - 0 <= score <= 100
            """),
        solutions=[dedent("""\
            t = int(input())
            for _ in range(t):
                s = int(input())
                if s >= 90:
                    print("A")
                elif s >= 80:
                    print("B")
                elif s >= 70:
                    print("C")
                elif s >= 60:
                    print("D")
                else:
                    print("F")
            """)],
        tests=[lines(3, 95, 72, 40), lines(1, 100), lines(1, 0),
               lines(10, 90, 89, 80, 79, 70, 69, 60, 59, 1, 99), lines(50, *scores)],
        tags=["multiple test cases"],
    )


def specs() -> list[Spec]:
    return [sum_two(), reverse_string(), max_of_list(), count_vowels(), count_up(), even_or_odd(),
            shout(), sum_of_list(), min_of_pairs(), fizz_buzz(), average(), circle(), count_words(),
            letter_grades()]
