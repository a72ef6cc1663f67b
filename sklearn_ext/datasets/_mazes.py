"""Perfect mazes with their shortest start-to-goal paths."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from collections import deque
from numbers import Integral

import numpy as np
from sklearn.utils import Bunch, check_random_state

from sklearn_ext.utils._sklearn_compat import Interval, validate_params

__all__ = ["make_mazes", "maze_shortest_path"]

WALL, OPEN, START, GOAL = 0, 1, 2, 3


def maze_shortest_path(maze, shape):
    """Shortest 4-connected path from the start to the goal, by breadth-first search.

    Parameters
    ----------
    maze : array-like of shape (height * width,)
        Pixel codes in row-major order: 0 wall, 1 open, 2 start, 3 goal.
    shape : (int, int)
        Height and width of the pixel grid.

    Returns
    -------
    path : ndarray of shape (height * width,)
        1 on the pixels of a shortest path (start and goal included), 0
        elsewhere; all zeros when the goal cannot be reached.
    """
    height, width = shape
    maze = np.asarray(maze).reshape(height, width)
    (start,), (goal,) = (np.flatnonzero(maze.ravel() == c) for c in (START, GOAL))
    parent = {start: -1}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if cell == goal:
            break
        r, c = divmod(cell, width)
        for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            nxt = rr * width + cc
            if (
                0 <= rr < height
                and 0 <= cc < width
                and maze[rr, cc] != WALL
                and nxt not in parent
            ):
                parent[nxt] = cell
                queue.append(nxt)
    path = np.zeros(height * width, dtype=np.int64)
    cell = goal if goal in parent else -1
    while cell != -1:
        path[cell] = 1
        cell = parent[cell]
    return path


@validate_params(
    {
        "n_mazes": [Interval(Integral, 1, None, closed="left")],
        "rooms": [tuple, list],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_mazes(n_mazes, *, rooms=(4, 4), random_state=None):
    """Generate perfect mazes and the shortest path between two of their rooms.

    A maze of ``rooms = (h, w)`` rooms is drawn on a pixel grid of shape
    ``(2h + 1, 2w + 1)``: rooms sit at odd coordinates, walls everywhere
    else, and a uniformly random spanning tree of the room grid (Wilson's
    algorithm, loop-erased random walks) opens the wall between rooms it
    joins. The maze is perfect (no loops), so the path between any two rooms
    is unique and is the shortest one. Start and goal are two distinct rooms
    drawn at random.

    Parameters
    ----------
    n_mazes : int
        Number of mazes.
    rooms : (int, int), default=(4, 4)
        Rooms per column and per row, each at least 1 and at least 2 rooms
        in all.
    random_state : int, RandomState instance or None, default=None
        Seeds the spanning trees and the start and goal rooms.

    Returns
    -------
    data : Bunch
        ``data``: ndarray of shape (n_mazes, height * width), pixel codes in
        row-major order (0 wall, 1 open, 2 start, 3 goal); ``target``: same
        shape, 1 on the pixels of the shortest path (start and goal
        included); ``path_length``: pixels on each path; ``shape``: the pixel
        grid ``(height, width)``.

    Examples
    --------
    >>> from sklearn_ext.datasets import make_mazes
    >>> ds = make_mazes(2, rooms=(3, 3), random_state=0)
    >>> ds.shape, ds.data.shape
    ((7, 7), (2, 49))
    >>> bool((ds.target.sum(axis=1) == ds.path_length).all())
    True
    """
    rooms = tuple(rooms)
    if (
        len(rooms) != 2
        or not all(isinstance(r, Integral) and r >= 1 for r in rooms)
        or rooms[0] * rooms[1] < 2
    ):
        raise ValueError(
            "rooms must be two positive integers with at least 2 rooms in all; "
            f"got {rooms!r}."
        )
    h, w = int(rooms[0]), int(rooms[1])
    shape = (2 * h + 1, 2 * w + 1)
    rng = check_random_state(random_state)
    n_rooms = h * w

    def neighbours(room):
        r, c = divmod(room, w)
        return [
            rr * w + cc
            for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1))
            if 0 <= rr < h and 0 <= cc < w
        ]

    def pixel(room):
        r, c = divmod(room, w)
        return (2 * r + 1) * shape[1] + 2 * c + 1

    data, target, lengths = [], [], []
    for _ in range(n_mazes):
        grid = np.zeros(shape[0] * shape[1], dtype=np.int64)
        in_tree = np.zeros(n_rooms, dtype=bool)
        in_tree[rng.randint(n_rooms)] = True
        for room in rng.permutation(n_rooms):
            # Wilson: a random walk until it hits the tree, loops erased by
            # remembering only the last exit from each room.
            step, cell = {}, room
            while not in_tree[cell]:
                options = neighbours(cell)
                step[cell] = options[rng.randint(len(options))]
                cell = step[cell]
            cell = room
            while not in_tree[cell]:
                in_tree[cell] = True
                nxt = step[cell]
                a, b = pixel(cell), pixel(nxt)
                grid[a] = grid[b] = grid[(a + b) // 2] = OPEN
                cell = nxt
        start, goal = rng.choice(n_rooms, size=2, replace=False)
        grid[pixel(start)], grid[pixel(goal)] = START, GOAL
        path = maze_shortest_path(grid, shape)
        data.append(grid)
        target.append(path)
        lengths.append(int(path.sum()))
    return Bunch(
        data=np.array(data),
        target=np.array(target),
        path_length=np.array(lengths),
        shape=shape,
    )
