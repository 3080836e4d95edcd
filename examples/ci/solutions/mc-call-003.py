def largest(nums: list[int]) -> int:
    return max(nums)
