"""The who-reads-what picture: which thread reads each in-link, per pattern, and rows drawn top to bottom
in the order the lecture's title names them."""
import matplotlib

matplotlib.use("Agg")
import numpy as np
import pytest

from helpers.measure import figures
from helpers.lectures import l10_instruments as instruments
from helpers.core.arguments import ArrayKindError
from fake_arrays import GpuArray, masked


def test_each_pattern_names_the_thread_that_reads_each_in_link():
    degree = [2, 0, 3]
    assert figures.reader_of_each_in_link(degree, "thread").tolist() == [0, 0, 2, 2, 2]
    assert figures.reader_of_each_in_link(degree, "warp").tolist() == [0, 1, 64, 65, 66]
    assert figures.reader_of_each_in_link(degree, "subwarp", width=2).tolist() == [0, 1, 4, 5, 4]
    assert figures.reader_of_each_in_link(degree, "edge").tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="pattern must be one of"):
        figures.reader_of_each_in_link(degree, "block")


def test_the_first_pattern_is_drawn_on_top():
    ax = figures.who_reads([3, 1, 2], patterns=("thread", "edge"))
    first, second = (ax.transData.transform((0, row))[1] for row in (0, 1))
    assert first > second                                # display y grows upward
    assert [label.get_text() for label in ax.get_yticklabels()] == ["thread", "edge"]
    matplotlib.pyplot.close(ax.figure)


def test_in_degrees_refuse_masked_arrays_and_gpu_ones_where_the_picture_is_drawn_on_the_host():
    for call in (figures.reader_of_each_in_link, figures.who_reads, instruments.busiest_lane):
        with pytest.raises(ArrayKindError, match="in_degree is a masked array with masked entries"):
            call(masked((2, 0, 3)))
    for call in (figures.reader_of_each_in_link, figures.who_reads):
        with pytest.raises(ArrayKindError, match=r"in_degree is a CuPy array .*in_degree\.get\(\)"):
            call(GpuArray())

    with pytest.raises(ArrayKindError, match=r"in_degree is a CuPy array .*in_degree\.get\(\)"):
        instruments.busiest_lane(GpuArray())             # was int()'s TypeError: it has no .get()
    for call in (figures.reader_of_each_in_link, figures.who_reads, instruments.busiest_lane):
        with pytest.raises(ArrayKindError, match="in_degree holds a masked array with masked entries"):
            call([masked((2, 50, 3))])                   # busiest_lane read the hidden 50
        with pytest.raises(ArrayKindError, match=r"in_degree must be a 1-D array, got shape \(\)"):
            call(np.array(2))
