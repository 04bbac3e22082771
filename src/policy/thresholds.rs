pub fn compute() {}
pub struct ThresholdReport;
