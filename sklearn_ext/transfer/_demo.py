"""The ``python -m sklearn_ext demo`` demo of the transfer family.

Only the command line (and the test harness that runs the demos) imports this
module. Each ``demo_<ClassName>()`` returns the dict that
:func:`sklearn_ext.__main__.run_demo` documents; ``SECONDS`` holds each demo's
measured time on one core, which orders ``make demo`` (longest first).
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

SECONDS = {
    "TaskVectorTransporter": 2,
}


def demo_TaskVectorTransporter():
    """Digits rotated 30 degrees; MLP 64-64 to MLP 96-96.

    The task vector of the 64-64 MLP fine-tuned on rotated digits, moved
    to a 96-96 MLP trained on upright digits, against that MLP without
    the update.
    """
    from sklearn_ext.transfer import TaskVectorTransporter, task_vector
    from sklearn_ext.transfer._digits_task import digits_transfer_task, fine_tune
    from sklearn_ext.unlearning import UnlearnableMLPClassifier

    task = digits_transfer_task(0)
    X, y, S = task["X_train"], task["y_train"], task["S_train"]
    source = UnlearnableMLPClassifier((64, 64), max_iter=100, random_state=0)
    target = UnlearnableMLPClassifier((96, 96), max_iter=100, random_state=1)
    source.fit(X, y)
    target.fit(X, y)
    tau = task_vector(fine_tune(source, S, y), source)
    theseus = TaskVectorTransporter().fit(
        S[:256], source_base=source, target_base=target
    )
    moved = theseus.apply(target, theseus.transform(tau))
    return {
        "data": "digits rotated by 30 degrees; MLP 64-64 fine-tuned on them, "
        "its task vector moved to an MLP 96-96 trained on upright digits",
        "metric": "accuracy on rotated test digits",
        "score": float(np.mean(moved.predict(task["S_test"]) == task["y_test"])),
        "baseline": "the 96-96 MLP without the update",
        "baseline_score": float(
            np.mean(target.predict(task["S_test"]) == task["y_test"])
        ),
        "greater_is_better": True,
    }
