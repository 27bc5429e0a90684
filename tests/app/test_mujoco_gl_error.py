"""A MuJoCo env whose OpenGL backend (``MUJOCO_GL``) cannot load is one ``Error:`` line
naming ``env.env_name``, the backend and the fix, not a traceback from inside mujoco."""

from __future__ import annotations

import ctypes.util
import os

import pytest

from .test_config_errors import assert_user_error, run_bad


@pytest.mark.skipif(
    ctypes.util.find_library("OSMesa") is not None, reason="this machine has libOSMesa"
)
def test_an_unloadable_mujoco_gl_backend_is_one_error_line(tmp_path):
    # without the PyOpenGL platform an earlier import of mujoco (MUJOCO_GL=egl) may have set
    # in this process: with PYOPENGL_PLATFORM=egl inherited, MUJOCO_GL=osmesa loads nothing
    env = {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}
    env["MUJOCO_GL"] = "osmesa"
    proc = run_bad("sac", tmp_path, "env=halfcheetah", env=env)
    assert_user_error(
        proc, "env.env_name='HalfCheetah-v5'", "MUJOCO_GL=osmesa", "libosmesa6", "MUJOCO_GL=egl"
    )
