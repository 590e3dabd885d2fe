"""nbgrader grades chapters 02, 04, 06, ... (every other graded chapter): see nbgrading.py."""

import pytest
from nbgrading import chapter_id, grade_each_kind_of_hand_in, half


@pytest.mark.parametrize("solution_path", half(1), ids=chapter_id)
def test_nbgrader_grades_each_kind_of_hand_in(solution_path, tmp_path):
    grade_each_kind_of_hand_in(solution_path, tmp_path)
