# The explain tests share helpers whose asserts pytest should report as it does in a test module.
import pytest

pytest.register_assert_rewrite("tests.explainer.helpers")
