-- Its rows are tasks now (0031 copied them): the table and its fence triggers go.
DROP TABLE `deal_tasks`;
